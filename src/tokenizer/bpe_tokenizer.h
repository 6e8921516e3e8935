// BpeTokenizer: the BPE tokenizers with a merge table. encode() is llama.cpp's pipeline:
// special-token partition, pre-tokenizer split, symbol spelling, merges, then ids (a merged symbol
// that is not a token falls back to its single bytes, dropping any without a token, as llama.cpp
// does). Two spellings:
//  - byte-level (GGUF tokenizer model "gpt2"): words are spelled in GPT-2's byte alphabet, a byte
//    token is the byte's character;
//  - SentencePiece-style (model "gemma4"): words stay raw UTF-8 with every space written U+2581
//    ("\xE2\x96\x81"), a byte token is "<0xXX>", and a word made only of newlines that is itself
//    a token is taken whole.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab.h"

namespace lazyattn::tokenizer {

class BpeTokenizer final : public Tokenizer {
public:
    // kUnsupported for an unknown pre-tokenizer type; kCorrupt for inconsistent tables. The
    // pre-tokenizer is `pre_type` when given, else tokenizer.ggml.pre.
    static Expected<std::unique_ptr<BpeTokenizer>> create(const VocabData& data, std::string_view pre_type = {});

    std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const override;
    std::string token_to_piece(TokenId id, bool render_special) const override;

    int32_t vocab_size() const override { return vocab_.size(); }
    TokenId bos_id() const override { return vocab_.special().bos; }
    TokenId eos_id() const override { return vocab_.special().eos; }
    bool add_bos() const override { return vocab_.add_bos(); }
    bool is_end_of_generation(TokenId id) const override { return vocab_.is_eog(id); }
    std::optional<TokenId> find_token(std::string_view text) const override;
    std::string pre_type() const override { return pre_type_; }
    std::string model_type() const override { return model_type_; }

    const Vocab& vocab() const { return vocab_; }

private:
    BpeTokenizer(Vocab vocab, PreTokenizer pre, BpeMerges merges, const PreTokenizerInfo& info, std::string pre_type,
                 std::string model_type);

    void encode_text(std::string_view text, std::vector<TokenId>& out) const;
    // `word` is one pre-tokenizer piece already spelled as the merges expect.
    void encode_word(const std::string& word, std::vector<TokenId>& out) const;
    std::optional<TokenId> byte_token(uint8_t byte) const;
    std::vector<TokenId> merge_word(const std::string& word) const;
    std::string compute_piece(TokenId id) const;

    Vocab vocab_;
    PreTokenizer pre_;
    BpeMerges merges_;
    bool ignore_merges_;
    bool spm_style_;  // see PreTokenizerInfo::spm_style
    std::string pre_type_;
    std::string model_type_;
    std::vector<std::string> pieces_;  // token_to_piece(id, render_special = true)

    // Word -> ids, bounded; encode() is const and may run on several threads.
    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<TokenId>> cache_;
};

}  // namespace lazyattn::tokenizer
