#include "store/model_fingerprint.h"

#include <xxhash.h>

#include <string>
#include <type_traits>
#include <vector>

namespace lazyattn::store {
namespace {

// Feeds values to an XXH3 state, each after its field's name, so that no two configs hash alike
// by a value slipping from one field into the next (vectors and strings carry their length).
class FieldHasher {
public:
    explicit FieldHasher(XXH3_state_t* st) : st_(st) {}

    template <class T>
    requires std::is_arithmetic_v<T> || std::is_enum_v<T>
    void field(const char* name, T value) {
        tag(name);
        bytes(&value, sizeof value);  // floats as their bit patterns: 100000 and 100000.4 differ
    }
    void field(const char* name, const std::string& value) {
        tag(name);
        length(value.size());
        bytes(value.data(), value.size());
    }
    template <class T>
    requires std::is_arithmetic_v<T>
    void field(const char* name, const std::vector<T>& value) {
        tag(name);
        length(value.size());
        bytes(value.data(), value.size() * sizeof(T));
    }

    void section(const char* name) { tag(name); }
    void bytes(const void* data, size_t n) { XXH3_128bits_update(st_, data, n); }

private:
    void tag(const char* name) { bytes(name, std::char_traits<char>::length(name) + 1); }
    void length(size_t n) {
        const uint64_t v = n;
        bytes(&v, sizeof v);
    }
    XXH3_state_t* st_;
};

// EVERY field of RopeConfig and ModelConfig is hashed below: a field left out is a way for
// another model's KV to pass as this one's. These count the fields, so one added to either
// struct fails to compile until it is hashed here and mutated in
// tests/unit/store/test_model_fingerprint.cpp (which checks the same counts).
static_assert(detail::field_count<model::RopeConfig>() == 6,
              "RopeConfig changed: hash the new field in hash_rope() and update this count");
static_assert(detail::field_count<model::ModelConfig>() == 22,
              "ModelConfig changed: hash the new field in hash_config() and update this count");

void hash_rope(FieldHasher& h, const char* which, const model::RopeConfig& r) {
    h.section(which);
    h.field("freq_base", r.freq_base);
    h.field("num_rotary_dims", r.num_rotary_dims);
    h.field("pairing", r.pairing);
    h.field("freq_factors", r.freq_factors);
    h.field("linear_scale", r.linear_scale);
    h.field("attn_factor", r.attn_factor);
}

void hash_config(FieldHasher& h, const model::ModelConfig& c) {
    h.field("arch", c.arch);
    h.field("arch_name", c.arch_name);
    h.field("name", c.name);
    h.field("num_layers", c.num_layers);
    h.field("hidden_dim", c.hidden_dim);
    h.field("ffn_dim", c.ffn_dim);
    h.field("num_heads", c.num_heads);
    h.field("num_kv_heads", c.num_kv_heads);
    h.field("head_dim", c.head_dim);
    h.field("vocab_size", c.vocab_size);
    h.field("context_length", c.context_length);
    h.field("norm_eps", c.norm_eps);
    h.field("qkv_bias", c.qkv_bias);
    h.field("tied_embeddings", c.tied_embeddings);
    h.field("fused_qkv", c.fused_qkv);
    hash_rope(h, "rope", c.rope);
    h.field("sliding_window", c.sliding_window);
    h.field("layer_sliding", c.layer_sliding);
    hash_rope(h, "rope_local", c.rope_local);
    h.field("attention_scale", c.attention_scale);
    h.field("embedding_scale", c.embedding_scale);
    h.field("final_logit_softcap", c.final_logit_softcap);
}

Fingerprint digest(XXH3_state_t* st) {
    const XXH128_hash_t d = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    return {d.low64, d.high64};
}

XXH3_state_t* hash_of_config(const model::ModelConfig& config) {
    XXH3_state_t* st = XXH3_createState();
    XXH3_128bits_reset(st);
    FieldHasher h(st);
    hash_config(h, config);
    return st;
}

}  // namespace

Fingerprint config_fingerprint(const model::ModelConfig& config) { return digest(hash_of_config(config)); }

Fingerprint model_fingerprint(const model::Model& model) {
    XXH3_state_t* st = hash_of_config(model.config());
    FieldHasher h(st);
    const loader::GgufFile& file = model.gguf();
    for (const loader::GgufTensorInfo& t : file.tensors()) {
        h.field("tensor", t.name);
        h.field("type", uint32_t(t.type));
        h.field("dims", t.dims);
        h.bytes(file.tensor_data(t), size_t(t.num_bytes));
    }
    return digest(st);
}

}  // namespace lazyattn::store
