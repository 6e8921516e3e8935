// Hand-made byte-level BPE vocabularies for the tokenizer tests: the 256 byte tokens in GPT-2's
// alphabet, then the caller's merged tokens and special tokens.
#pragma once

#include <string>
#include <vector>

#include "core/byte_unicode.h"
#include "tokenizer/vocab.h"

namespace lazyattn::tokenizer::testing_support {

using namespace text;

struct ExtraToken {
    std::string text;
    TokenType type = TokenType::kNormal;
};

// Ids 0..255 are the bytes in byte order; extra tokens follow in order.
inline VocabData make_byte_vocab(const std::vector<ExtraToken>& extra, const std::vector<std::string>& merges,
                                 const std::string& pre = "gpt2") {
    VocabData d;
    d.model = "gpt2";
    d.pre = pre;
    for (int b = 0; b < 256; ++b) {
        d.tokens.push_back(byte_to_unicode(static_cast<uint8_t>(b)));
        d.token_types.push_back(static_cast<int64_t>(TokenType::kNormal));
    }
    for (const ExtraToken& t : extra) {
        d.tokens.push_back(t.text);
        d.token_types.push_back(static_cast<int64_t>(t.type));
    }
    d.merges = merges;
    return d;
}

}  // namespace lazyattn::tokenizer::testing_support
