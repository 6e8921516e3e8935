// Vocab: the token tables of a tokenizer (text, attributes, scores), the text -> id index, the
// special token ids and the BOS/EOS flags. Built from VocabData (what the GGUF metadata holds) by
// llama.cpp's rules, including its text-based detection of EOT/EOM/FIM tokens, which also marks
// them as control tokens, and its end-of-generation set.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::tokenizer {

// Token attributes, a bit set as in llama.cpp (llama_token_attr): the GGUF token type gives one,
// loading may add kAttrControl.
enum TokenAttr : uint32_t {
    kAttrUndefined = 0,
    kAttrUnknown = 1u << 0,
    kAttrUnused = 1u << 1,
    kAttrNormal = 1u << 2,
    kAttrControl = 1u << 3,
    kAttrUserDefined = 1u << 4,
    kAttrByte = 1u << 5,
    kAttrLstrip = 1u << 7,  // special-token matching eats whitespace on the left
    kAttrRstrip = 1u << 8,  // ... and on the right
};

// The tokenizer part of a GGUF file's metadata (tokenizer.ggml.*), unvalidated.
struct VocabData {
    std::string model;                 // tokenizer.ggml.model: "gpt2", "llama", "gemma4", ...
    std::string pre;                   // tokenizer.ggml.pre; empty when absent
    std::string name;                  // general.name: llama.cpp sets some token attributes by it
    std::vector<std::string> tokens;   // tokenizer.ggml.tokens
    std::vector<int64_t> token_types;  // tokenizer.ggml.token_type (TokenType); empty: all normal
    std::vector<double> scores;        // tokenizer.ggml.scores; empty: all 0
    std::vector<std::string> merges;   // tokenizer.ggml.merges ("left right", in rank order)
    std::optional<int64_t> bos_id, eos_id, eot_id, eom_id, unk_id, sep_id, pad_id;
    std::optional<int64_t> fim_pre_id, fim_suf_id, fim_mid_id, fim_pad_id, fim_rep_id, fim_sep_id;
    std::optional<bool> add_bos, add_eos;  // tokenizer.ggml.add_bos_token / add_eos_token
    std::optional<bool> add_space_prefix;  // tokenizer.ggml.add_space_prefix (SentencePiece)
};

// Special token ids; -1 where the vocabulary has none.
struct SpecialTokenIds {
    TokenId bos = -1, eos = -1, eot = -1, eom = -1, unk = -1, sep = -1, pad = -1;
    TokenId fim_pre = -1, fim_suf = -1, fim_mid = -1, fim_pad = -1, fim_rep = -1, fim_sep = -1;
};

// The byte a SentencePiece byte token's text "<0xAB>" stands for; nullopt for any other text.
std::optional<uint8_t> byte_of_token_text(std::string_view text);

class Vocab {
public:
    // `default_add_bos` is the pre-tokenizer type's default, which tokenizer.ggml.add_bos_token
    // overrides unless `force_add_bos` (llama.cpp's Gemma 4 workaround). kCorrupt for inconsistent
    // tables (duplicate tokens, short type/score arrays) and for a BOS/EOS that must be added but
    // has no valid id.
    static Expected<Vocab> build(const VocabData& data, bool default_add_bos, bool force_add_bos = false);

    int32_t size() const { return static_cast<int32_t>(texts_.size()); }
    bool contains(TokenId id) const { return id >= 0 && id < size(); }
    const std::string& text(TokenId id) const { return texts_[id]; }
    uint32_t attr(TokenId id) const { return attrs_[id]; }
    float score(TokenId id) const { return scores_[id]; }
    std::optional<TokenId> find(std::string_view text) const;

    const SpecialTokenIds& special() const { return special_; }
    bool add_bos() const { return add_bos_; }
    bool add_eos() const { return add_eos_; }
    bool is_eog(TokenId id) const;
    const std::vector<TokenId>& eog_ids() const { return eog_ids_; }  // ascending
    // Control, user-defined and unknown tokens, longest text first: the order in which text is
    // searched for them (ties by id, so the order is deterministic).
    const std::vector<TokenId>& special_tokens() const { return special_tokens_; }

private:
    struct StringHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };

    Status load_tokens(const VocabData& data);
    void load_special_ids(const VocabData& data);
    void detect_special_tokens_by_text();
    void build_eog_set();
    void demote_plain_end_of_sentence();
    void build_special_token_order();
    void set_attributes_by_model_name(const std::string& name);

    std::vector<std::string> texts_;
    std::vector<uint32_t> attrs_;
    std::vector<float> scores_;
    std::unordered_map<std::string, TokenId, StringHash, std::equal_to<>> ids_;
    SpecialTokenIds special_;
    bool add_bos_ = false;
    bool add_eos_ = false;
    std::vector<TokenId> eog_ids_;
    std::vector<TokenId> special_tokens_;
};

}  // namespace lazyattn::tokenizer
