// Weights are N(0, sigma) with sigma = 0.5 / sqrt(fan_in) clamped to [0.02, 0.1], so a forward
// pass through random layers keeps activations of order one; RMSNorm weights are 1 + N(0, 0.02)
// and qwen2's q/k/v biases N(0, 0.02); q/k head norms (qwen3, gemma3) 1 + N(0, 0.1), so that
// they matter. Gemma's norm weights are written as llama.cpp's converter stores them, with the
// "1 +" of Gemma's RMSNorm already added. Each tensor draws from its own generator seeded by
// (seed, tensor name), so adding a tensor never changes the values of another.
#include "synthetic/synthetic_model.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "loader/gguf_writer.h"
#include "loader/quantize.h"
#include "synthetic/synthetic_vocab.h"

namespace lazyattn::synthetic {

using namespace lazyattn::loader;  // the GGUF writer and reader this library drives

namespace {

// SmolLM2-135M-Instruct's tokenizer.chat_template (ChatML with a default system prompt).
constexpr const char* kChatTemplate =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";

// splitmix64: tiny, fast, identical on every platform (unlike std::normal_distribution).
class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>((next() >> 11) + 1) * 0x1.0p-53; }  // (0, 1]
    double normal() {                                                                 // Box-Muller
        return std::sqrt(-2.0 * std::log(uniform())) * std::cos(6.283185307179586 * uniform());
    }

private:
    uint64_t state_;
};

uint64_t stream_seed(uint64_t seed, const std::string& name) {
    uint64_t h = 0xcbf29ce484222325ull ^ seed;  // FNV-1a over the name
    for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

std::vector<float> normal_values(uint64_t seed, const std::string& name, int64_t n, float mean, float sigma) {
    Rng rng(stream_seed(seed, name));
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = mean + sigma * static_cast<float>(rng.normal());
    return v;
}

class ModelBuilder {
public:
    explicit ModelBuilder(const SyntheticModelOptions& o) : o_(o) {}

    // sigma <= 0: the fan-in rule of the file comment.
    Status matrix(const std::string& name, int64_t in, int64_t out, float sigma = 0.0f) {
        if (name == o_.omit_tensor) return {};
        if (sigma <= 0.0f) sigma = std::clamp(0.5f / std::sqrt(static_cast<float>(in)), 0.02f, 0.1f);
        const std::vector<float> v = normal_values(o_.seed, name, in * out, 0.0f, sigma);
        LA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, quantize(o_.weight_type, v.data(), in * out));
        w_.add_tensor(name, {in, out}, o_.weight_type, std::move(bytes));
        return {};
    }
    void vector(const std::string& name, int64_t n, float mean, float sigma) {
        if (name == o_.omit_tensor) return;
        w_.add_tensor_f32(name, {n}, normal_values(o_.seed, name, n, mean, sigma));
    }
    GgufWriter& writer() { return w_; }

private:
    const SyntheticModelOptions& o_;
    GgufWriter w_;
};

void add_metadata(GgufWriter& w, const SyntheticModelOptions& o, const SyntheticVocab& vocab) {
    const std::string& a = o.arch;
    w.add_string("general.architecture", a);
    // Not "...phi3...": llama.cpp gives models so named Phi-3's special-token attributes, looking
    // up tokens ("</s>") this vocabulary does not have.
    w.add_string("general.name", "synthetic " + std::string(a == "phi3" ? "phi-three" : a.c_str()));
    w.add_u32("general.file_type", gguf_file_type(o.weight_type));
    w.add_u32("general.quantization_version", 2);
    w.add_u32(a + ".block_count", static_cast<uint32_t>(o.num_layers));
    w.add_u32(a + ".context_length", static_cast<uint32_t>(o.context_length));
    w.add_u32(a + ".embedding_length", static_cast<uint32_t>(o.hidden));
    w.add_u32(a + ".feed_forward_length", static_cast<uint32_t>(o.ffn));
    w.add_u32(a + ".attention.head_count", static_cast<uint32_t>(o.num_heads));
    w.add_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(o.num_kv_heads));
    w.add_f32(a + ".rope.freq_base", o.rope_freq_base);
    w.add_f32(a + ".attention.layer_norm_rms_epsilon", a == "llama" || a == "phi3" ? 1e-5f : 1e-6f);
    w.add_u32(a + ".rope.dimension_count", static_cast<uint32_t>(o.effective_rope_dims()));
    if (o.head_dim > 0) {
        w.add_u32(a + ".attention.key_length", static_cast<uint32_t>(o.head_dim));
        w.add_u32(a + ".attention.value_length", static_cast<uint32_t>(o.head_dim));
    }
    if (a == "gemma3") {
        // As Gemma 3 4B and larger: the global layers' RoPE is linearly scaled by 8.
        w.add_string(a + ".rope.scaling.type", "linear");
        w.add_f32(a + ".rope.scaling.factor", 8.0f);
        if (o.sliding_window > 0) {
            w.add_u32(a + ".attention.sliding_window", static_cast<uint32_t>(o.sliding_window));
            w.add_u32(a + ".attention.sliding_window_pattern", static_cast<uint32_t>(o.sliding_window_pattern));
        }
    }
    if (o.phi3_rope_factors) {
        w.add_u32(a + ".rope.scaling.original_context_length", static_cast<uint32_t>(o.context_length / 4));
        w.add_f32(a + ".rope.scaling.attn_factor", 1.19f);
    }
    if (o.final_logit_softcap > 0.0f) w.add_f32(a + ".final_logit_softcapping", o.final_logit_softcap);
    w.add_u32(a + ".vocab_size", static_cast<uint32_t>(vocab.tokens.size()));
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", "smollm");
    w.add_string_array("tokenizer.ggml.tokens", vocab.tokens);
    w.add_i32_array("tokenizer.ggml.token_type", vocab.token_types);
    w.add_string_array("tokenizer.ggml.merges", vocab.merges);
    w.add_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(vocab.im_start_id));
    w.add_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(vocab.im_end_id));
    w.add_u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(vocab.endoftext_id));
    w.add_u32("tokenizer.ggml.padding_token_id", static_cast<uint32_t>(vocab.im_end_id));
    w.add_bool("tokenizer.ggml.add_bos_token", false);
    w.add_bool("tokenizer.ggml.add_space_prefix", false);
    w.add_string("tokenizer.chat_template", kChatTemplate);
}

Status add_layer(ModelBuilder& b, const SyntheticModelOptions& o, int layer) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    const int64_t head_dim = o.effective_head_dim();
    const int64_t q_dim = head_dim * o.num_heads, kv_dim = head_dim * o.num_kv_heads;
    const bool gemma = o.arch == "gemma3", phi = o.arch == "phi3";
    b.vector(p + "attn_norm.weight", o.hidden, 1.0f, 0.02f);
    if (phi) {  // rows: q, then k, then v
        LA_RETURN_IF_ERROR(b.matrix(p + "attn_qkv.weight", o.hidden, q_dim + 2 * kv_dim));
    } else {
        LA_RETURN_IF_ERROR(b.matrix(p + "attn_q.weight", o.hidden, q_dim));
        LA_RETURN_IF_ERROR(b.matrix(p + "attn_k.weight", o.hidden, kv_dim));
        LA_RETURN_IF_ERROR(b.matrix(p + "attn_v.weight", o.hidden, kv_dim));
    }
    if (o.arch == "qwen2") {
        b.vector(p + "attn_q.bias", q_dim, 0.0f, 0.02f);
        b.vector(p + "attn_k.bias", kv_dim, 0.0f, 0.02f);
        b.vector(p + "attn_v.bias", kv_dim, 0.0f, 0.02f);
    }
    if (o.arch == "qwen3" || gemma) {
        b.vector(p + "attn_q_norm.weight", head_dim, 1.0f, 0.1f);
        b.vector(p + "attn_k_norm.weight", head_dim, 1.0f, 0.1f);
    }
    LA_RETURN_IF_ERROR(b.matrix(p + "attn_output.weight", q_dim, o.hidden));
    if (gemma) b.vector(p + "post_attention_norm.weight", o.hidden, 1.0f, 0.02f);
    b.vector(p + "ffn_norm.weight", o.hidden, 1.0f, 0.02f);
    if (phi) {  // rows: gate, then up
        LA_RETURN_IF_ERROR(b.matrix(p + "ffn_up.weight", o.hidden, 2 * int64_t(o.ffn)));
    } else {
        LA_RETURN_IF_ERROR(b.matrix(p + "ffn_gate.weight", o.hidden, o.ffn));
        LA_RETURN_IF_ERROR(b.matrix(p + "ffn_up.weight", o.hidden, o.ffn));
    }
    LA_RETURN_IF_ERROR(b.matrix(p + "ffn_down.weight", o.ffn, o.hidden));
    if (gemma) b.vector(p + "post_ffw_norm.weight", o.hidden, 1.0f, 0.02f);
    return {};
}

// Llama 3.1's rope_freqs factors (rope_type "llama3": factor 8, low/high frequency factors 1 and 4,
// original context 8192), computed from the definition for this head size and base.
std::vector<float> llama3_freq_factors(const SyntheticModelOptions& o) {
    const int32_t d = o.effective_rope_dims();
    constexpr double kFactor = 8.0, kLow = 1.0, kHigh = 4.0, kOldContext = 8192.0;
    std::vector<float> f;
    for (int32_t i = 0; i < d / 2; ++i) {
        const double freq = std::pow(double(o.rope_freq_base), -2.0 * i / d);
        const double wavelen = 2.0 * 3.141592653589793 / freq;
        if (wavelen < kOldContext / kHigh) {
            f.push_back(1.0f);
        } else if (wavelen > kOldContext / kLow) {
            f.push_back(float(kFactor));
        } else {
            const double smooth = (kOldContext / wavelen - kLow) / (kHigh - kLow);
            f.push_back(float(1.0 / ((1.0 - smooth) / kFactor + smooth)));
        }
    }
    return f;
}

// Phi-3 LongRoPE-style factors: long ones from 1 to ~6, short ones near 1, one per rotated pair.
void add_phi3_rope_factors(ModelBuilder& b, const SyntheticModelOptions& o) {
    const int32_t half = o.effective_rope_dims() / 2;
    std::vector<float> long_f(half), short_f(half);
    for (int32_t i = 0; i < half; ++i) {
        long_f[i] = 1.0f + 5.0f * float(i) / float(std::max(1, half - 1));
        short_f[i] = 1.0f + 0.05f * float(i % 3);
    }
    b.writer().add_tensor_f32("rope_factors_long.weight", {half}, long_f);
    b.writer().add_tensor_f32("rope_factors_short.weight", {half}, short_f);
}

}  // namespace

uint32_t gguf_file_type(GgmlType t) {
    switch (t) {
        case GgmlType::kF16:
            return 1;
        case GgmlType::kQ4_0:
            return 2;
        case GgmlType::kQ4_1:
            return 3;
        case GgmlType::kQ8_0:
            return 7;
        case GgmlType::kQ5_0:
            return 8;
        case GgmlType::kQ5_1:
            return 9;
        case GgmlType::kQ2_K:
            return 10;
        case GgmlType::kQ3_K:
            return 12;  // Q3_K_M
        case GgmlType::kQ4_K:
            return 15;  // Q4_K_M
        case GgmlType::kQ5_K:
            return 17;  // Q5_K_M
        case GgmlType::kQ6_K:
            return 18;
        case GgmlType::kBF16:
            return 32;
        default:
            return 0;
    }
}

Status SyntheticModelOptions::validate() const {
    if (arch != "llama" && arch != "qwen2" && arch != "qwen3" && arch != "gemma3" && arch != "phi3") {
        return invalid_argument("synthetic model arch '" + arch + "' (expected llama, qwen2, qwen3, gemma3 or phi3)");
    }
    if (head_dim < 0 || (head_dim > 0 && head_dim % 2 != 0) || sliding_window < 0 || sliding_window_pattern < 0) {
        return invalid_argument("synthetic model head_dim must be even, sliding window sizes non-negative");
    }
    if (rope_dims < 0 || rope_dims % 2 != 0 ||
        (head_dim == 0 && hidden % num_heads == 0 && rope_dims > hidden / num_heads) ||
        (head_dim > 0 && rope_dims > head_dim)) {
        return invalid_argument("synthetic model rope_dims must be even and at most the head size");
    }
    if (num_layers <= 0 || hidden <= 0 || num_heads <= 0 || num_kv_heads <= 0 || ffn <= 0 || context_length <= 0) {
        return invalid_argument("synthetic model sizes must be positive");
    }
    if (head_dim == 0 && (hidden % num_heads != 0 || (hidden / num_heads) % 2 != 0)) {
        return invalid_argument("hidden " + std::to_string(hidden) + " / heads " + std::to_string(num_heads) +
                                " must give an even head_dim");
    }
    if (num_heads % num_kv_heads != 0) {
        return invalid_argument("heads " + std::to_string(num_heads) + " is not a multiple of kv heads " +
                                std::to_string(num_kv_heads));
    }
    switch (weight_type) {
        case GgmlType::kF32:
        case GgmlType::kF16:
        case GgmlType::kBF16:
        case GgmlType::kQ8_0:
        case GgmlType::kQ4_0:
        case GgmlType::kQ4_1:
        case GgmlType::kQ5_0:
        case GgmlType::kQ5_1:
        case GgmlType::kQ2_K:
        case GgmlType::kQ3_K:
        case GgmlType::kQ4_K:
        case GgmlType::kQ5_K:
        case GgmlType::kQ6_K:
            break;
        default:
            return invalid_argument(std::string("synthetic weights cannot be written as ") +
                                    ggml_type_name(weight_type));
    }
    const int64_t block = ggml_type_traits(weight_type).block_size;
    if (hidden % block != 0 || ffn % block != 0 || (int64_t(effective_head_dim()) * num_heads) % block != 0) {
        return invalid_argument(std::string("weight type ") + ggml_type_name(weight_type) +
                                " needs hidden, ffn and heads * head_dim to be multiples of its block size");
    }
    if (!(rope_freq_base > 0.0f)) return invalid_argument("rope_freq_base must be positive");
    return {};
}

Status write_synthetic_model(const std::string& path, const SyntheticModelOptions& o) {
    LA_RETURN_IF_ERROR(o.validate());
    const SyntheticVocab vocab = build_synthetic_vocab();
    const auto vocab_size = static_cast<int64_t>(vocab.tokens.size());
    ModelBuilder b(o);
    add_metadata(b.writer(), o, vocab);
    // Embedding rows are not summed over a fan-in: give them the top of the sigma range.
    LA_RETURN_IF_ERROR(b.matrix("token_embd.weight", o.hidden, vocab_size, 0.1f));
    b.vector("output_norm.weight", o.hidden, 1.0f, 0.02f);
    if (!o.tied_embeddings) LA_RETURN_IF_ERROR(b.matrix("output.weight", o.hidden, vocab_size));
    if (o.llama3_rope_freqs) {
        b.writer().add_tensor_f32("rope_freqs.weight", {o.effective_rope_dims() / 2}, llama3_freq_factors(o));
    }
    if (o.phi3_rope_factors) add_phi3_rope_factors(b, o);
    for (int layer = 0; layer < o.num_layers; ++layer) LA_RETURN_IF_ERROR(add_layer(b, o, layer));
    return b.writer().write(path);
}

}  // namespace lazyattn::synthetic
