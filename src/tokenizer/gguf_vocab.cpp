#include "tokenizer/gguf_vocab.h"

#include "loader/gguf_file.h"

namespace lazyattn::tokenizer {
namespace {

// Moves the value into `out` when present; absence is fine, any other error is returned.
template <typename T, typename Out>
Status take_optional(Expected<T> value, Out& out) {
    if (value.ok()) {
        out = std::move(value).value();
        return Status::ok_status();
    }
    return value.status().code() == StatusCode::kNotFound ? Status::ok_status() : value.status();
}

Status read_special_ids(const loader::GgufFile& f, VocabData& d) {
    const std::pair<const char*, std::optional<int64_t>*> keys[] = {
        {"tokenizer.ggml.bos_token_id", &d.bos_id},
        {"tokenizer.ggml.eos_token_id", &d.eos_id},
        {"tokenizer.ggml.eot_token_id", &d.eot_id},
        {"tokenizer.ggml.eom_token_id", &d.eom_id},
        {"tokenizer.ggml.unknown_token_id", &d.unk_id},
        {"tokenizer.ggml.seperator_token_id", &d.sep_id},  // sic: the GGUF key's spelling
        {"tokenizer.ggml.padding_token_id", &d.pad_id},
        {"tokenizer.ggml.fim_pre_token_id", &d.fim_pre_id},
        {"tokenizer.ggml.fim_suf_token_id", &d.fim_suf_id},
        {"tokenizer.ggml.fim_mid_token_id", &d.fim_mid_id},
        {"tokenizer.ggml.fim_pad_token_id", &d.fim_pad_id},
        {"tokenizer.ggml.fim_rep_token_id", &d.fim_rep_id},
        {"tokenizer.ggml.fim_sep_token_id", &d.fim_sep_id},
        // Deprecated spellings, read after the new ones so they win as in llama.cpp.
        {"tokenizer.ggml.prefix_token_id", &d.fim_pre_id},
        {"tokenizer.ggml.suffix_token_id", &d.fim_suf_id},
        {"tokenizer.ggml.middle_token_id", &d.fim_mid_id},
    };
    for (const auto& [key, out] : keys) LA_RETURN_IF_ERROR(take_optional(f.get_int(key), *out));
    return Status::ok_status();
}

}  // namespace

Expected<VocabData> read_vocab_data(const loader::GgufFile& f) {
    VocabData d;
    LA_ASSIGN_OR_RETURN(d.model, f.get_string("tokenizer.ggml.model"));
    LA_RETURN_IF_ERROR(take_optional(f.get_string("tokenizer.ggml.pre"), d.pre));
    LA_ASSIGN_OR_RETURN(d.tokens, f.get_string_array("tokenizer.ggml.tokens"));
    LA_RETURN_IF_ERROR(take_optional(f.get_int_array("tokenizer.ggml.token_type"), d.token_types));
    LA_RETURN_IF_ERROR(take_optional(f.get_float_array("tokenizer.ggml.scores"), d.scores));
    LA_RETURN_IF_ERROR(take_optional(f.get_string_array("tokenizer.ggml.merges"), d.merges));
    LA_RETURN_IF_ERROR(read_special_ids(f, d));
    LA_RETURN_IF_ERROR(take_optional(f.get_bool("tokenizer.ggml.add_bos_token"), d.add_bos));
    LA_RETURN_IF_ERROR(take_optional(f.get_bool("tokenizer.ggml.add_eos_token"), d.add_eos));
    LA_RETURN_IF_ERROR(take_optional(f.get_bool("tokenizer.ggml.add_space_prefix"), d.add_space_prefix));
    LA_RETURN_IF_ERROR(take_optional(f.get_string("general.name"), d.name));
    return d;
}

}  // namespace lazyattn::tokenizer
