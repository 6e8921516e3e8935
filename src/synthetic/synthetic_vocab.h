// A small but real-format byte-level BPE vocabulary (GGUF tokenizer model "gpt2"), learned from a
// built-in English sample so synthetic models can be tokenized by the same code as real ones:
// the 256 byte tokens spelled in GPT-2's bytes_to_unicode alphabet, merged tokens learned
// greedily (most frequent adjacent pair first), then the ChatML control tokens.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lazyattn::synthetic {

struct SyntheticVocab {
    std::vector<std::string> tokens;   // GPT-2 byte-alphabet spellings; id = index
    std::vector<int32_t> token_types;  // 1 normal, 3 control (GGUF tokenizer.ggml.token_type)
    std::vector<std::string> merges;   // "left right", in priority order
    int32_t endoftext_id = -1;         // <|endoftext|>
    int32_t im_start_id = -1;          // <|im_start|>
    int32_t im_end_id = -1;            // <|im_end|>
};

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the other 68 bytes to U+0100 and
// up, in byte order. Returns the UTF-8 spelling of byte `b`'s symbol ("Ġ" for ' ').
std::string gpt2_byte_symbol(uint8_t b);

// The 256 bytes in GPT-2's vocabulary order (printable ranges first, then the remapped bytes).
std::vector<uint8_t> gpt2_byte_order();

// Learns up to `max_merges` merges (stopping when no pair occurs twice) from the built-in sample.
// Deterministic: ties go to the lexicographically smallest pair.
SyntheticVocab build_synthetic_vocab(int max_merges = 300);

// The built-in English sample text the merges are learned from.
const std::string& synthetic_vocab_sample_text();

}  // namespace lazyattn::synthetic
