// ModelConfig from GGUF metadata. Keys are `<arch>.<name>` as written by llama.cpp's
// convert_hf_to_gguf.py; defaults follow llama.cpp's loader (head_count_kv = head_count,
// rope.freq_base = 10000, rope.dimension_count = head_dim). Architecture-specific facts that are
// not in the metadata (the RoPE pairing, the norms, the activation) come from the table in
// architecture.cpp. The result is validated before it is returned, so code holding a ModelConfig
// may rely on validate()'s invariants.
#include "model/model_config.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <variant>

#include "loader/dequantize.h"
#include "loader/gguf_file.h"

namespace lazyattn::model {

namespace {

using loader::GgufFile;

Expected<int32_t> to_int32(const std::string& key, int64_t v) {
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
        return out_of_range("metadata key '" + key + "' value " + std::to_string(v) + " does not fit in int32");
    }
    return static_cast<int32_t>(v);
}

Expected<int32_t> required_int(const GgufFile& f, const std::string& key) {
    LA_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
    return to_int32(key, v);
}

// The value, `fallback` when the key is absent, an error when present with a wrong type.
Expected<int32_t> optional_int(const GgufFile& f, const std::string& key, int32_t fallback) {
    if (f.find(key) == nullptr) return fallback;
    return required_int(f, key);
}

Expected<float> optional_float(const GgufFile& f, const std::string& key, float fallback) {
    if (f.find(key) == nullptr) return fallback;
    LA_ASSIGN_OR_RETURN(double v, f.get_float(key));
    return static_cast<float>(v);
}

Expected<int32_t> read_vocab_size(const GgufFile& f, const std::string& arch) {
    const std::string key = arch + ".vocab_size";
    if (f.find(key) != nullptr) return required_int(f, key);
    const loader::GgufValue* tokens = f.find("tokenizer.ggml.tokens");
    if (tokens == nullptr) {
        return not_found("vocabulary size unknown: neither '" + key + "' nor 'tokenizer.ggml.tokens' is present");
    }
    LA_ASSIGN_OR_RETURN(std::vector<std::string> list, f.get_string_array("tokenizer.ggml.tokens"));
    return to_int32("tokenizer.ggml.tokens", static_cast<int64_t>(list.size()));
}

// rope.scaling.type "linear" with rope.scaling.factor f divides positions by f; older files use
// rope.scale_linear. "none" (or no key) means no scaling; "longrope" (Phi-3) scales through its
// factor tensors and rope.scaling.attn_factor; other types (yarn, ...) are not implemented.
Status read_rope_scaling(const GgufFile& f, const std::string& arch, RopeConfig* rope) {
    const std::string type_key = arch + ".rope.scaling.type";
    std::string type = "none";
    float factor = 1.0f;
    if (f.find(type_key) != nullptr) {
        LA_ASSIGN_OR_RETURN(type, f.get_string(type_key));
        LA_ASSIGN_OR_RETURN(factor, optional_float(f, arch + ".rope.scaling.factor", 1.0f));
    } else if (f.find(arch + ".rope.scale_linear") != nullptr) {
        type = "linear";
        LA_ASSIGN_OR_RETURN(factor, optional_float(f, arch + ".rope.scale_linear", 1.0f));
    }
    LA_ASSIGN_OR_RETURN(rope->attn_factor, optional_float(f, arch + ".rope.scaling.attn_factor", 1.0f));
    if (!(rope->attn_factor > 0.0f) || !std::isfinite(rope->attn_factor)) {
        return corrupt("rope.scaling.attn_factor " + std::to_string(rope->attn_factor) + " is not positive");
    }
    if (type == "none" || type == "longrope") return {};
    if (type != "linear") return unsupported("RoPE scaling type '" + type + "' is not supported");
    if (!(factor > 0.0f) || !std::isfinite(factor)) {
        return corrupt("RoPE linear scaling factor " + std::to_string(factor) + " is not positive");
    }
    rope->linear_scale = 1.0f / factor;
    return {};
}

// Per-pair frequency factors, one per rotated pair (num_rotary_dims / 2 values): rope_freqs.weight
// (Llama 3.1+), else Phi-3's rope_factors_long.weight when the model runs past its original
// context (rope.scaling.original_context_length), else rope_factors_short.weight; as llama.cpp
// picks them, with the context the model is run at being its context_length here.
Status read_freq_factors(const GgufFile& f, const std::string& a, int32_t context_length, RopeConfig* rope) {
    const char* name = "rope_freqs.weight";
    if (f.find_tensor(name) == nullptr) {
        LA_ASSIGN_OR_RETURN(int32_t original, optional_int(f, a + ".rope.scaling.original_context_length", 0));
        name = original > 0 && context_length > original ? "rope_factors_long.weight" : "rope_factors_short.weight";
    }
    const loader::GgufTensorInfo* t = f.find_tensor(name);
    if (t == nullptr) return {};
    const int64_t expected = rope->num_rotary_dims / 2;
    if (t->num_elements != expected) {
        return corrupt(std::string(name) + " has " + std::to_string(t->num_elements) + " elements, expected " +
                       std::to_string(expected) + " (rotary dims / 2)");
    }
    rope->freq_factors.resize(static_cast<size_t>(expected));
    const Status st = loader::dequantize_row(t->type, f.tensor_data(*t), rope->freq_factors.data(), t->num_elements);
    if (!st.ok()) return Status(st.code(), std::string(name) + ": " + st.message());
    return {};
}

// Cross-checks the embedding table against the dimensions read from metadata.
Status check_token_embedding(const GgufFile& f, const ModelConfig& c) {
    const loader::GgufTensorInfo* t = f.find_tensor("token_embd.weight");
    if (t == nullptr) return {};
    if (t->dims.size() != 2 || t->dims[0] != c.hidden_dim || t->dims[1] != c.vocab_size) {
        std::string shape;
        for (int64_t d : t->dims) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
        return corrupt("token_embd.weight has shape [" + shape + "], expected [" + std::to_string(c.hidden_dim) + ", " +
                       std::to_string(c.vocab_size) + "] (hidden, vocab)");
    }
    return {};
}

Status read_dimensions(const GgufFile& f, const std::string& a, ModelConfig* c) {
    LA_ASSIGN_OR_RETURN(c->num_layers, required_int(f, a + ".block_count"));
    LA_ASSIGN_OR_RETURN(c->hidden_dim, required_int(f, a + ".embedding_length"));
    LA_ASSIGN_OR_RETURN(c->ffn_dim, required_int(f, a + ".feed_forward_length"));
    LA_ASSIGN_OR_RETURN(c->num_heads, required_int(f, a + ".attention.head_count"));
    LA_ASSIGN_OR_RETURN(c->num_kv_heads, optional_int(f, a + ".attention.head_count_kv", c->num_heads));
    LA_ASSIGN_OR_RETURN(c->context_length, required_int(f, a + ".context_length"));
    LA_ASSIGN_OR_RETURN(c->vocab_size, read_vocab_size(f, a));
    LA_ASSIGN_OR_RETURN(double eps, f.get_float(a + ".attention.layer_norm_rms_epsilon"));
    c->norm_eps = static_cast<float>(eps);
    if (c->num_heads <= 0) {
        return corrupt("attention.head_count is " + std::to_string(c->num_heads));
    }
    // The head size is attention.key_length where the file says it (Qwen3, Gemma 3: q and the
    // attention output are then heads * head size wide, not hidden), else hidden / heads.
    const int32_t even_split = c->hidden_dim % c->num_heads == 0 ? c->hidden_dim / c->num_heads : 0;
    LA_ASSIGN_OR_RETURN(c->head_dim, optional_int(f, a + ".attention.key_length", even_split));
    if (c->head_dim <= 0) {
        return corrupt("head size unknown: no attention.key_length and hidden " + std::to_string(c->hidden_dim) +
                       " is not a multiple of " + std::to_string(c->num_heads) + " heads");
    }
    LA_ASSIGN_OR_RETURN(int32_t value_len, optional_int(f, a + ".attention.value_length", c->head_dim));
    if (value_len != c->head_dim) {
        return unsupported(a + ".attention.value_length = " + std::to_string(value_len) +
                           " differs from the key length " + std::to_string(c->head_dim));
    }
    return {};
}

Status read_rope(const GgufFile& f, const std::string& a, const ArchTraits& info, ModelConfig* c) {
    c->rope.pairing = info.pairing;
    LA_ASSIGN_OR_RETURN(c->rope.freq_base, optional_float(f, a + ".rope.freq_base", 10000.0f));
    LA_ASSIGN_OR_RETURN(c->rope.num_rotary_dims, optional_int(f, a + ".rope.dimension_count", c->head_dim));
    LA_RETURN_IF_ERROR(read_rope_scaling(f, a, &c->rope));
    // Freq factors are sized by the rotary dims, so check those first.
    if (c->rope.num_rotary_dims <= 0 || c->rope.num_rotary_dims % 2 != 0 || c->rope.num_rotary_dims > c->head_dim) {
        return corrupt("rope.dimension_count " + std::to_string(c->rope.num_rotary_dims) +
                       " is not even and in (0, head_dim = " + std::to_string(c->head_dim) + "]");
    }
    return read_freq_factors(f, a, c->context_length, &c->rope);
}

// Gemma 3's local layers: attention.sliding_window W > 0 makes layer l a sliding-window layer
// unless it is the last of each group of attention.sliding_window_pattern layers (default 6:
// five local, one global), or as an explicit per-layer bool array under the same key. Local
// layers rotate with base rope.freq_base_swa (default 10000) and no scaling.
Status read_sliding_window(const GgufFile& f, const std::string& a, ModelConfig* c) {
    LA_ASSIGN_OR_RETURN(c->sliding_window, optional_int(f, a + ".attention.sliding_window", 0));
    if (c->sliding_window < 0) return corrupt("attention.sliding_window is " + std::to_string(c->sliding_window));
    if (c->sliding_window == 0) return {};
    c->layer_sliding.assign(size_t(c->num_layers), 0);
    const std::string pattern_key = a + ".attention.sliding_window_pattern";
    const loader::GgufValue* pattern = f.find(pattern_key);
    if (pattern != nullptr && pattern->type == loader::GgufValueType::kArray) {
        const auto* list = std::get_if<std::vector<bool>>(&pattern->value);
        if (list == nullptr) return corrupt(pattern_key + " is an array but not of bools");
        const std::vector<bool>& flags = *list;
        if (flags.size() != size_t(c->num_layers)) {
            return corrupt(pattern_key + " has " + std::to_string(flags.size()) + " entries for " +
                           std::to_string(c->num_layers) + " layers");
        }
        for (size_t l = 0; l < flags.size(); ++l) c->layer_sliding[l] = flags[l] ? 1 : 0;
    } else {
        LA_ASSIGN_OR_RETURN(int32_t n, optional_int(f, pattern_key, 6));
        if (n < 0) return corrupt(pattern_key + " is " + std::to_string(n));
        for (int32_t l = 0; l < c->num_layers; ++l) c->layer_sliding[size_t(l)] = n == 0 || l % n < n - 1;
    }
    c->rope_local = c->rope;
    c->rope_local.linear_scale = 1.0f;
    c->rope_local.freq_factors.clear();
    c->rope_local.attn_factor = 1.0f;
    LA_ASSIGN_OR_RETURN(c->rope_local.freq_base, optional_float(f, a + ".rope.freq_base_swa", 10000.0f));
    return {};
}

// Score scale, embedding scale, logit soft-capping. Gemma 3 scales scores by
// 1/sqrt(query_pre_attn_scalar), which the file does not carry: it is the head size except for
// the 27B model (62 layers), where it is hidden / heads (llama.cpp decides the same way).
Status read_scales(const GgufFile& f, const std::string& a, const ArchTraits& info, ModelConfig* c) {
    float query_scalar = float(c->head_dim);
    if (info.arch == Architecture::kGemma3 && c->num_layers == 62) query_scalar = float(c->hidden_dim / c->num_heads);
    c->attention_scale = 1.0f / std::sqrt(query_scalar);
    c->embedding_scale = info.scale_embedding ? std::sqrt(float(c->hidden_dim)) : 1.0f;
    LA_ASSIGN_OR_RETURN(c->final_logit_softcap, optional_float(f, a + ".final_logit_softcapping", 0.0f));
    if (c->final_logit_softcap < 0.0f || !std::isfinite(c->final_logit_softcap)) {
        return corrupt("final_logit_softcapping " + std::to_string(c->final_logit_softcap) + " is negative");
    }
    return {};
}

}  // namespace

Expected<ModelConfig> ModelConfig::from_gguf(const loader::GgufFile& file) {
    ModelConfig c;
    LA_ASSIGN_OR_RETURN(c.arch_name, file.get_string("general.architecture"));
    LA_ASSIGN_OR_RETURN(const ArchTraits* info, find_architecture(c.arch_name));
    c.arch = info->arch;
    if (file.find("general.name") != nullptr) {
        LA_ASSIGN_OR_RETURN(c.name, file.get_string("general.name"));
    }
    LA_RETURN_IF_ERROR(read_dimensions(file, c.arch_name, &c));
    LA_RETURN_IF_ERROR(read_rope(file, c.arch_name, *info, &c));
    if (info->sliding_window) LA_RETURN_IF_ERROR(read_sliding_window(file, c.arch_name, &c));
    LA_RETURN_IF_ERROR(read_scales(file, c.arch_name, *info, &c));
    c.fused_qkv = file.find_tensor("blk.0.attn_qkv.weight") != nullptr;
    c.qkv_bias = file.find_tensor(c.fused_qkv ? "blk.0.attn_qkv.bias" : "blk.0.attn_q.bias") != nullptr;
    c.tied_embeddings = file.find_tensor("output.weight") == nullptr;
    const Status valid = c.validate();
    if (!valid.ok()) return corrupt("inconsistent model hyperparameters: " + valid.message());
    LA_RETURN_IF_ERROR(check_token_embedding(file, c));
    return c;
}

Status ModelConfig::validate() const {
    const std::pair<const char*, int32_t> positive[] = {
        {"num_layers", num_layers}, {"hidden_dim", hidden_dim},         {"ffn_dim", ffn_dim},
        {"num_heads", num_heads},   {"num_kv_heads", num_kv_heads},     {"head_dim", head_dim},
        {"vocab_size", vocab_size}, {"context_length", context_length},
    };
    for (const auto& [name, value] : positive) {
        if (value <= 0) return invalid_argument(std::string(name) + " = " + std::to_string(value) + " is not positive");
    }
    if (q_dim() > (int64_t(1) << 20)) {
        return invalid_argument("num_heads " + std::to_string(num_heads) + " * head_dim " + std::to_string(head_dim) +
                                " is implausibly large");
    }
    if (sliding_window < 0 || (sliding_window > 0 && layer_sliding.size() != size_t(num_layers))) {
        return invalid_argument("sliding_window " + std::to_string(sliding_window) + " needs one flag per layer");
    }
    if (!(attention_scale > 0.0f) || !std::isfinite(attention_scale)) {
        return invalid_argument("attention_scale " + std::to_string(attention_scale) + " is not positive");
    }
    if (!(embedding_scale > 0.0f) || !std::isfinite(embedding_scale)) {
        return invalid_argument("embedding_scale " + std::to_string(embedding_scale) + " is not positive");
    }
    if (num_heads % num_kv_heads != 0) {
        return invalid_argument("num_heads " + std::to_string(num_heads) + " is not a multiple of num_kv_heads " +
                                std::to_string(num_kv_heads));
    }
    if (rope.num_rotary_dims <= 0 || rope.num_rotary_dims % 2 != 0 || rope.num_rotary_dims > head_dim) {
        return invalid_argument("rotary dims " + std::to_string(rope.num_rotary_dims) +
                                " must be even and in (0, head_dim = " + std::to_string(head_dim) + "]");
    }
    if (!(rope.freq_base > 0.0f) || !std::isfinite(rope.freq_base)) {
        return invalid_argument("rope freq_base " + std::to_string(rope.freq_base) + " is not positive");
    }
    if (!(rope.linear_scale > 0.0f) || !std::isfinite(rope.linear_scale)) {
        return invalid_argument("rope linear_scale " + std::to_string(rope.linear_scale) + " is not positive");
    }
    if (!rope.freq_factors.empty()) {
        if (rope.freq_factors.size() != static_cast<size_t>(rope.num_rotary_dims / 2)) {
            return invalid_argument("rope freq_factors has " + std::to_string(rope.freq_factors.size()) +
                                    " values, expected rotary dims / 2");
        }
        for (float v : rope.freq_factors) {
            if (!(v > 0.0f) || !std::isfinite(v)) {
                return invalid_argument("rope freq_factors holds " + std::to_string(v));
            }
        }
    }
    if (!(norm_eps > 0.0f) || !std::isfinite(norm_eps)) {
        return invalid_argument("norm_eps " + std::to_string(norm_eps) + " is not positive");
    }
    return {};
}

std::string ModelConfig::describe() const {
    std::ostringstream s;
    s << "model:          " << (name.empty() ? "(unnamed)" : name) << "\n"
      << "architecture:   " << arch_name << "\n"
      << "layers:         " << num_layers << "\n"
      << "hidden:         " << hidden_dim << "\n"
      << "ffn:            " << ffn_dim << "\n"
      << "heads:          " << num_heads << " query, " << num_kv_heads << " kv (group "
      << (num_kv_heads > 0 ? num_heads / num_kv_heads : 0) << "), head_dim " << head_dim << "\n"
      << "vocab:          " << vocab_size << "\n"
      << "context:        " << context_length << "\n"
      << "rms norm eps:   " << norm_eps << "\n"
      << "rope:           base " << rope.freq_base << ", " << rope.num_rotary_dims << " dims, "
      << (rope.pairing == RopePairing::kNeox ? "neox" : "interleaved") << " pairing";
    if (rope.linear_scale != 1.0f) s << ", linear scale " << rope.linear_scale;
    if (!rope.freq_factors.empty()) s << ", " << rope.freq_factors.size() << " freq factors";
    if (rope.attn_factor != 1.0f) s << ", attn factor " << rope.attn_factor;
    s << "\n";
    if (sliding_window > 0) {
        const auto local = std::count(layer_sliding.begin(), layer_sliding.end(), uint8_t(1));
        s << "sliding window: " << sliding_window << " tokens on " << local << " of " << num_layers
          << " layers (local rope base " << rope_local.freq_base << ")\n";
    }
    const ArchTraits& t = traits();
    std::string layer = t.activation == FfnActivation::kGeluTanh ? "GeGLU (tanh GELU)" : "SwiGLU";
    if (t.qk_norm) layer += ", q/k head norms";
    if (t.post_norms) layer += ", post-attention and post-FFN norms";
    if (fused_qkv) layer += ", fused qkv";
    if (t.fused_gate_up) layer += ", fused gate/up";
    s << "layer:          " << layer << "\n"
      << "attn scale:     " << attention_scale << "\n";
    if (embedding_scale != 1.0f) s << "embed scale:    " << embedding_scale << "\n";
    if (final_logit_softcap > 0.0f) s << "logit softcap:  " << final_logit_softcap << "\n";
    s << "qkv bias:       " << (qkv_bias ? "yes" : "no") << "\n"
      << "embeddings:     " << (tied_embeddings ? "tied (LM head = token_embd)" : "separate output.weight") << "\n";
    return s.str();
}

}  // namespace lazyattn::model
