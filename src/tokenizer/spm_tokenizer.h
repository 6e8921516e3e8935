// SpmTokenizer: the SentencePiece BPE tokenizer (GGUF tokenizer model "llama": Llama 2, Mistral,
// TinyLlama, Phi-3). encode() follows llama.cpp's llm_tokenizer_spm:
//  1. special tokens are split out first (partition_special_tokens);
//  2. each text fragment that starts the input or follows a special token gets a leading space
//     when tokenizer.ggml.add_space_prefix is on (the default), then every space is written
//     U+2581 ("\xE2\x96\x81");
//  3. the fragment is cut into UTF-8 characters and adjacent symbols are merged greedily: always
//     the pair whose concatenation is the vocabulary token with the highest score (ties: the
//     leftmost pair), until no adjacent pair spells a token. No merge table is involved;
//  4. a final symbol that is not a token becomes its bytes' "<0xXX>" tokens (byte fallback),
//     or, for a vocabulary without them, one unknown token.
// Pieces: U+2581 reads as a space, byte tokens give their byte, control and unknown tokens are
// hidden unless render_special.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace lazyattn::tokenizer {

class SpmTokenizer final : public Tokenizer {
public:
    // kCorrupt for inconsistent tables, a byte token whose text is not "<0xXX>", or a vocabulary
    // that can neither spell every byte nor fall back to an unknown token.
    static Expected<std::unique_ptr<SpmTokenizer>> create(const VocabData& data);

    std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const override;
    std::string token_to_piece(TokenId id, bool render_special) const override;

    int32_t vocab_size() const override { return vocab_.size(); }
    TokenId bos_id() const override { return vocab_.special().bos; }
    TokenId eos_id() const override { return vocab_.special().eos; }
    bool add_bos() const override { return vocab_.add_bos(); }
    bool is_end_of_generation(TokenId id) const override { return vocab_.is_eog(id); }
    std::optional<TokenId> find_token(std::string_view text) const override { return vocab_.find(text); }
    std::string pre_type() const override { return "default"; }  // SentencePiece has no pre-tokenizer
    std::string model_type() const override { return "llama"; }

    const Vocab& vocab() const { return vocab_; }
    bool add_space_prefix() const { return add_space_prefix_; }

private:
    SpmTokenizer(Vocab vocab, bool add_space_prefix);

    // `text` has its spaces already written U+2581.
    void encode_escaped(std::string_view text, std::vector<TokenId>& out) const;
    void emit_symbol(std::string_view symbol, std::vector<TokenId>& out) const;
    std::string compute_piece(TokenId id) const;

    Vocab vocab_;
    bool add_space_prefix_;
    size_t max_token_bytes_ = 0;           // no merge can form a longer token
    std::array<TokenId, 256> byte_ids_{};  // byte -> its token, -1 if none
    std::vector<std::string> pieces_;      // token_to_piece(id, render_special = true)
};

}  // namespace lazyattn::tokenizer
