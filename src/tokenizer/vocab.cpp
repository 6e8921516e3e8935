// Mirrors llama.cpp's llama_vocab::impl::load for the parts tokenization and end-of-generation
// depend on. Where llama.cpp walks an unordered_map (EOT/FIM detection), ids are walked in
// ascending order instead so the result does not depend on hashing.
#include "tokenizer/vocab.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace lazyattn::tokenizer {
namespace {

uint32_t attr_from_type(int64_t type) {
    switch (static_cast<TokenType>(type)) {
        case TokenType::kUnknown:
            return kAttrUnknown;
        case TokenType::kUnused:
            return kAttrUnused;
        case TokenType::kNormal:
            return kAttrNormal;
        case TokenType::kControl:
            return kAttrControl;
        case TokenType::kUserDefined:
            return kAttrUserDefined;
        case TokenType::kByte:
            return kAttrByte;
        default:
            return kAttrUndefined;
    }
}

bool text_in(std::string_view text, std::initializer_list<std::string_view> list) {
    return std::find(list.begin(), list.end(), text) != list.end();
}

// Texts llama.cpp recognises for each special role when the metadata does not name the token.
bool is_eot_text(std::string_view t) {
    return text_in(t, {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
                       "<EOT>", "_<EOT>", "[EOT]",
                       "<\xEF\xBD\x9C"
                       "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                       "<end_of_utterance>"});
}
bool is_fim_pre_text(std::string_view t) {
    return text_in(t, {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                       "<\xEF\xBD\x9C"
                       "fim\xE2\x96\x81"
                       "begin\xEF\xBD\x9C>",
                       "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"});
}
bool is_fim_suf_text(std::string_view t) {
    return text_in(t, {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                       "<\xEF\xBD\x9C"
                       "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
                       "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"});
}
bool is_fim_mid_text(std::string_view t) {
    return text_in(t, {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                       "<\xEF\xBD\x9C"
                       "fim\xE2\x96\x81"
                       "end\xEF\xBD\x9C>",
                       "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"});
}
bool is_fim_pad_text(std::string_view t) {
    return text_in(t, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"});
}
bool is_fim_rep_text(std::string_view t) {
    return text_in(t, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
}
bool is_eog_text(std::string_view t) {
    return text_in(t, {"<|eot_id|>",
                       "<|im_end|>",
                       "<|end|>",
                       "<|return|>",
                       "<|call|>",
                       "<|flush|>",
                       "<|calls|>",
                       "<end_of_turn>",
                       "<|endoftext|>",
                       "</s>",
                       "<|eom_id|>",
                       "<EOT>",
                       "_<EOT>",
                       "[EOT]",
                       "[EOS]",
                       "<|end_of_text|>",
                       "<end_of_utterance>",
                       "<eos>",
                       "<turn|>",
                       "<|tool_response>",
                       "<\xEF\xBD\x9C"
                       "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                       "[e~["});
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

}  // namespace

std::optional<uint8_t> byte_of_token_text(std::string_view text) {
    if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return std::nullopt;
    const int high = hex_digit(text[3]);
    const int low = hex_digit(text[4]);
    if (high < 0 || low < 0) return std::nullopt;
    return static_cast<uint8_t>(high * 16 + low);
}

Expected<Vocab> Vocab::build(const VocabData& data, bool default_add_bos, bool force_add_bos) {
    Vocab v;
    LA_RETURN_IF_ERROR(v.load_tokens(data));
    v.load_special_ids(data);
    v.add_bos_ = force_add_bos || data.add_bos.value_or(default_add_bos);
    v.add_eos_ = data.add_eos.value_or(false);
    // llama.cpp would abort on the first encode; refuse the file at load instead.
    if (v.add_bos_ && v.special_.bos < 0) {
        return corrupt(
            "the vocabulary adds a BOS token but has none (tokenizer.ggml.bos_token_id missing or out of range)");
    }
    if (v.add_eos_ && v.special_.eos < 0) {
        return corrupt(
            "the vocabulary adds an EOS token but has none (tokenizer.ggml.eos_token_id missing or out of range)");
    }
    v.detect_special_tokens_by_text();
    v.build_eog_set();
    v.demote_plain_end_of_sentence();
    v.build_special_token_order();
    v.set_attributes_by_model_name(data.name);
    return v;
}

Status Vocab::load_tokens(const VocabData& data) {
    const size_t n = data.tokens.size();
    if (n == 0) return corrupt("tokenizer.ggml.tokens is empty");
    if (n > static_cast<size_t>(INT32_MAX)) return corrupt("tokenizer.ggml.tokens is too large");
    if (!data.token_types.empty() && data.token_types.size() < n) {
        return corrupt("tokenizer.ggml.token_type has " + std::to_string(data.token_types.size()) + " entries for " +
                       std::to_string(n) + " tokens");
    }
    if (!data.scores.empty() && data.scores.size() < n) {
        return corrupt("tokenizer.ggml.scores has " + std::to_string(data.scores.size()) + " entries for " +
                       std::to_string(n) + " tokens");
    }
    texts_.resize(n);
    attrs_.resize(n);
    scores_.resize(n);
    ids_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        const auto id = static_cast<TokenId>(i);
        // llama.cpp renames empty tokens so that every token has a distinct, non-empty text.
        texts_[i] = data.tokens[i].empty() ? "[EMPTY_" + std::to_string(i) + "]" : data.tokens[i];
        if (!ids_.emplace(texts_[i], id).second) {
            return corrupt("duplicate token in vocabulary: '" + texts_[i] + "' has ids " +
                           std::to_string(ids_.find(texts_[i])->second) + " and " + std::to_string(i));
        }
        attrs_[i] = data.token_types.empty() ? kAttrNormal : attr_from_type(data.token_types[i]);
        scores_[i] = data.scores.empty() ? 0.0f : static_cast<float>(data.scores[i]);
    }
    return Status::ok_status();
}

void Vocab::load_special_ids(const VocabData& data) {
    // llama.cpp's defaults for byte-level BPE and SentencePiece vocabularies; out-of-range
    // defaults are dropped.
    if (data.model == "gpt2") special_.bos = special_.eos = 11;
    if (data.model == "llama") {
        special_.bos = 1;
        special_.eos = 2;
        special_.unk = 0;
    }
    if (!contains(special_.unk)) special_.unk = -1;
    if (!contains(special_.bos)) special_.bos = -1;
    if (!contains(special_.eos)) special_.eos = -1;

    // An id outside the vocabulary is ignored (llama.cpp warns and keeps the default).
    auto take = [&](const std::optional<int64_t>& from, TokenId& to) {
        if (from && *from >= 0 && *from < size()) to = static_cast<TokenId>(*from);
    };
    take(data.bos_id, special_.bos);
    take(data.eos_id, special_.eos);
    take(data.eot_id, special_.eot);
    take(data.eom_id, special_.eom);
    take(data.unk_id, special_.unk);
    take(data.sep_id, special_.sep);
    take(data.pad_id, special_.pad);
    take(data.fim_pre_id, special_.fim_pre);
    take(data.fim_suf_id, special_.fim_suf);
    take(data.fim_mid_id, special_.fim_mid);
    take(data.fim_pad_id, special_.fim_pad);
    take(data.fim_rep_id, special_.fim_rep);
    take(data.fim_sep_id, special_.fim_sep);
}

void Vocab::detect_special_tokens_by_text() {
    struct Role {
        TokenId* id;
        bool (*matches)(std::string_view);
    };
    const std::array<Role, 8> roles = {{
        {&special_.eot, is_eot_text},
        {&special_.eom, [](std::string_view t) { return t == "<|eom_id|>"; }},
        {&special_.fim_pre, is_fim_pre_text},
        {&special_.fim_suf, is_fim_suf_text},
        {&special_.fim_mid, is_fim_mid_text},
        {&special_.fim_pad, is_fim_pad_text},
        {&special_.fim_rep, is_fim_rep_text},
        {&special_.fim_sep, [](std::string_view t) { return t == "<|file_sep|>"; }},
    }};
    for (TokenId id = 0; id < size(); ++id) {
        for (const Role& role : roles) {
            if (*role.id != -1 || !role.matches(texts_[id])) continue;
            *role.id = id;
            attrs_[id] |= kAttrControl;  // llama.cpp: "control-looking token ... overridden"
        }
    }
}

void Vocab::build_eog_set() {
    std::vector<TokenId> eog;
    for (const TokenId id : {special_.fim_pad, special_.fim_rep, special_.fim_sep}) {
        if (id != -1) eog.push_back(id);
    }
    for (TokenId id = 0; id < size(); ++id) {
        if (!is_eog_text(texts_[id])) continue;
        eog.push_back(id);
        attrs_[id] |= kAttrControl;
    }
    for (const TokenId id : {special_.eos, special_.eot, special_.eom}) {
        if (id != -1) eog.push_back(id);
    }
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
    eog_ids_ = std::move(eog);
}

void Vocab::demote_plain_end_of_sentence() {
    // Gemma 4's "</s>" is ordinary text, not an end marker; llama.cpp recognises such a
    // vocabulary by its "<|tool_response>" end token and makes "</s>" a normal token again.
    const auto marker = find("<|tool_response>");
    const auto eos_text = find("</s>");
    if (!marker || !eos_text || !is_eog(*marker) || !is_eog(*eos_text)) return;
    eog_ids_.erase(std::find(eog_ids_.begin(), eog_ids_.end(), *eos_text));
    attrs_[*eos_text] = kAttrNormal;
}

void Vocab::set_attributes_by_model_name(const std::string& name) {
    // The GGUF has no per-token strip flags; llama.cpp sets Phi-3's by model name: every special
    // token eats the whitespace after it, except <unk>, <s> and <|endoftext|>.
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    if (lower.find("phi-3") == std::string::npos && lower.find("phi3") == std::string::npos) return;
    for (const TokenId id : special_tokens_) attrs_[id] |= kAttrRstrip;
    if (const auto id = find("</s>")) attrs_[*id] |= kAttrRstrip;
    for (const char* text : {"<unk>", "<s>", "<|endoftext|>"}) {
        if (const auto id = find(text)) attrs_[*id] &= ~kAttrRstrip;
    }
}

void Vocab::build_special_token_order() {
    for (TokenId id = 0; id < size(); ++id) {
        if (attrs_[id] & (kAttrControl | kAttrUserDefined | kAttrUnknown)) {
            special_tokens_.push_back(id);
        }
    }
    std::stable_sort(special_tokens_.begin(), special_tokens_.end(),
                     [&](TokenId a, TokenId b) { return texts_[a].size() > texts_[b].size(); });
}

std::optional<TokenId> Vocab::find(std::string_view text) const {
    const auto it = ids_.find(text);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
}

bool Vocab::is_eog(TokenId id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

}  // namespace lazyattn::tokenizer
