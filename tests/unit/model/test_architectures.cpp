// Every supported architecture on tiny synthetic models written as llama.cpp's converter lays
// them out: the CPU backend against the reference backend, chunked prefill and decode against one
// shot, one token against a naive forward pass written here from the architectures' definitions,
// the config facts each architecture implies, and refusal of unknown architectures and missing
// tensors by name.
#include <cmath>
#include <map>

#include "loader/dequantize.h"
#include "loader/gguf_file.h"
#include "loader/gguf_writer.h"
#include "model_harness.h"
#include "random_inputs.h"
#include "synthetic_model_fixture.h"

namespace lazyattn {
namespace {

using testing::Harness;

struct Variant {
    std::string tag;
    synthetic::SyntheticModelOptions options;
};

synthetic::SyntheticModelOptions base(const std::string& arch) {
    synthetic::SyntheticModelOptions o;
    o.arch = arch;
    o.seed = 21;
    o.num_layers = 3;
    return o;
}

// llama plain and with Llama 3.1 frequency factors; qwen2; qwen3 and gemma3 with a head size
// other than hidden / heads; gemma3 with 8-token windows on layers 0 and 2 (pattern 2), and
// without windows but with logit soft-capping; phi3 with LongRoPE factors.
std::vector<Variant> variants() {
    std::vector<Variant> v;
    v.push_back({"llama", base("llama")});
    v.push_back({"llama3", base("llama")});
    v.back().options.llama3_rope_freqs = true;
    v.back().options.rope_freq_base = 500000.0f;
    v.push_back({"qwen2", base("qwen2")});
    v.push_back({"qwen3", base("qwen3")});
    v.back().options.head_dim = 32;
    v.push_back({"gemma3", base("gemma3")});
    v.back().options.head_dim = 32;
    v.back().options.sliding_window = 8;
    v.back().options.sliding_window_pattern = 2;
    v.back().options.rope_freq_base = 1000000.0f;
    v.push_back({"gemma3-global-softcap", base("gemma3")});
    v.back().options.final_logit_softcap = 3.0f;
    v.push_back({"phi3", base("phi3")});
    v.back().options.phi3_rope_factors = true;
    v.back().options.tied_embeddings = false;
    v.push_back({"phi3-partial", base("phi3")});  // as Phi-4-mini: 3/4 of each head rotates
    v.back().options.phi3_rope_factors = true;
    v.back().options.rope_dims = 12;
    return v;
}

std::string path_of(const Variant& v) { return testing::synthetic_model_path(v.options, "arch-" + v.tag); }

std::vector<int32_t> random_tokens(std::mt19937_64& rng, int32_t n, int32_t vocab) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = int32_t(rng() % vocab);
    return t;
}

TEST(Architectures, CpuBackendMatchesReferenceBackend) {
    for (const Variant& v : variants()) {
        Harness cpu(path_of(v), backend::make_cpu_backend(2)), ref(path_of(v), backend::make_reference_backend());
        std::mt19937_64 rng(testing::test_seed() + 5);
        const auto tokens = random_tokens(rng, 41, cpu.model->config().vocab_size);
        testing::expect_close(cpu.prefill_logits(tokens, 41), ref.prefill_logits(tokens, 41), 1e-3, 1e-1,
                              v.tag.c_str());
    }
}

TEST(Architectures, ChunkedPrefillAndDecodeMatchOneShot) {
    for (const Variant& v : variants()) {
        Harness h(path_of(v), backend::make_cpu_backend(2));
        std::mt19937_64 rng(testing::test_seed() + 6);
        const auto tokens = random_tokens(rng, 37, h.model->config().vocab_size);
        const auto whole = h.prefill_logits(tokens, 37);
        testing::expect_close(h.prefill_logits(tokens, 5), whole, 1e-4, 1e-1, (v.tag + " chunks of 5").c_str());
        testing::expect_close(h.prefill_logits(tokens, 1), whole, 1e-4, 1e-1, (v.tag + " one by one").c_str());
    }
}

// The naive pass: one token at position 0 sees only its own key, so each head's attention output
// is its KV head's value whatever q, k and RoPE are; everything else (embedding scale, norms, post
// norms, fused row order, activation, soft-cap, tied head) is computed here from the tensors.
class NaiveOneToken {
public:
    NaiveOneToken(const loader::GgufFile& f, const model::ModelConfig& c) : f_(f), c_(c) {}

    std::vector<float> logits(int32_t token) const {
        const int64_t hidden = c_.hidden_dim;
        const std::vector<float> embd = tensor("token_embd.weight");
        std::vector<float> x(embd.begin() + token * hidden, embd.begin() + (token + 1) * hidden);
        for (float& e : x) e *= c_.embedding_scale;
        for (int32_t l = 0; l < c_.num_layers; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            add(x, attention(p, norm(x, tensor(p + "attn_norm.weight"))));
            add(x, ffn(p, norm(x, tensor(p + "ffn_norm.weight"))));
        }
        const std::vector<float> h = norm(x, tensor("output_norm.weight"));
        const bool tied = f_.find_tensor("output.weight") == nullptr;
        std::vector<float> out = matvec(tensor(tied ? "token_embd.weight" : "output.weight"), h);
        if (c_.final_logit_softcap > 0.0f) {
            for (float& o : out) o = float(c_.final_logit_softcap * std::tanh(o / c_.final_logit_softcap));
        }
        return out;
    }

private:
    std::vector<float> tensor(const std::string& name) const {
        const loader::GgufTensorInfo* t = f_.find_tensor(name);
        EXPECT_NE(t, nullptr) << name;
        std::vector<float> v(size_t(t->num_elements));
        EXPECT_TRUE(loader::dequantize_row(t->type, f_.tensor_data(*t), v.data(), t->num_elements).ok());
        return v;
    }
    bool has(const std::string& name) const { return f_.find_tensor(name) != nullptr; }
    static std::vector<float> matvec(const std::vector<float>& w, const std::vector<float>& x) {
        std::vector<float> y(w.size() / x.size());
        for (size_t o = 0; o < y.size(); ++o) {
            double s = 0;
            for (size_t i = 0; i < x.size(); ++i) s += double(w[o * x.size() + i]) * x[i];
            y[o] = float(s);
        }
        return y;
    }
    std::vector<float> norm(const std::vector<float>& x, const std::vector<float>& w) const {
        double ss = 0;
        for (float e : x) ss += double(e) * e;
        const double inv = 1.0 / std::sqrt(ss / double(x.size()) + c_.norm_eps);
        std::vector<float> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = float(x[i] * inv * w[i]);
        return y;
    }
    static void add(std::vector<float>& x, const std::vector<float>& y) {
        for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    }
    std::vector<float> attention(const std::string& p, const std::vector<float>& h) const {
        const int64_t q_dim = c_.q_dim(), kv_dim = c_.kv_dim(), d = c_.head_dim;
        std::vector<float> v;
        if (has(p + "attn_qkv.weight")) {  // rows q, k, v: v is the last kv_dim outputs
            const std::vector<float> qkv = matvec(tensor(p + "attn_qkv.weight"), h);
            v.assign(qkv.begin() + q_dim + kv_dim, qkv.end());
        } else {
            v = matvec(tensor(p + "attn_v.weight"), h);
            if (has(p + "attn_v.bias")) add(v, tensor(p + "attn_v.bias"));
        }
        std::vector<float> heads(static_cast<size_t>(q_dim));
        const int32_t group = c_.num_heads / c_.num_kv_heads;
        for (int32_t head = 0; head < c_.num_heads; ++head) {
            for (int64_t i = 0; i < d; ++i) heads[head * d + i] = v[(head / group) * d + i];
        }
        std::vector<float> o = matvec(tensor(p + "attn_output.weight"), heads);
        if (has(p + "post_attention_norm.weight")) o = norm(o, tensor(p + "post_attention_norm.weight"));
        return o;
    }
    std::vector<float> ffn(const std::string& p, const std::vector<float>& h) const {
        std::vector<float> gate, up;
        if (has(p + "ffn_gate.weight")) {
            gate = matvec(tensor(p + "ffn_gate.weight"), h);
            up = matvec(tensor(p + "ffn_up.weight"), h);
        } else {  // Phi-3: ffn_up holds gate rows, then up rows
            const std::vector<float> both = matvec(tensor(p + "ffn_up.weight"), h);
            gate.assign(both.begin(), both.begin() + c_.ffn_dim);
            up.assign(both.begin() + c_.ffn_dim, both.end());
        }
        const bool gelu = c_.arch == model::Architecture::kGemma3;
        for (size_t i = 0; i < gate.size(); ++i) {
            const double g = gate[i];
            const double act = gelu ? 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)))
                                    : g / (1.0 + std::exp(-g));
            gate[i] = float(act * up[i]);
        }
        std::vector<float> out = matvec(tensor(p + "ffn_down.weight"), gate);
        if (has(p + "post_ffw_norm.weight")) out = norm(out, tensor(p + "post_ffw_norm.weight"));
        return out;
    }

    const loader::GgufFile& f_;
    const model::ModelConfig& c_;
};

TEST(Architectures, OneTokenMatchesANaiveForwardPass) {
    for (const Variant& v : variants()) {
        Harness h(path_of(v), backend::make_cpu_backend(2));
        const NaiveOneToken naive(h.model->gguf(), h.model->config());
        for (const int32_t token : {7, 300}) {
            testing::expect_close(h.prefill_logits({token}, 1), naive.logits(token), 1e-4, 1e-1, v.tag.c_str());
        }
    }
}

// The window reaches the model: Gemma 3 with an 8-token window and with one longer than the
// prompt (same weights) agree while the prompt fits in 8 tokens and differ after.
TEST(Architectures, GemmaWindowMasksOnlyPastItsLength) {
    auto o = base("gemma3");
    o.head_dim = 32;
    o.sliding_window_pattern = 2;
    o.sliding_window = 8;
    Harness narrow(testing::synthetic_model_path(o, "gemma3-w8"), backend::make_cpu_backend(2));
    o.sliding_window = 1000;
    Harness wide(testing::synthetic_model_path(o, "gemma3-w1000"), backend::make_cpu_backend(2));
    std::mt19937_64 rng(testing::test_seed() + 7);
    const int32_t vocab = narrow.model->config().vocab_size;
    const auto tokens = random_tokens(rng, 20, vocab);
    const auto a = narrow.prefill_logits(tokens, 20), b = wide.prefill_logits(tokens, 20);
    const size_t fit = 8 * size_t(vocab);
    testing::expect_close({a.begin(), a.begin() + fit}, {b.begin(), b.begin() + fit}, 1e-5, 1e-1, "first 8");
    EXPECT_GT(testing::max_relative_difference({a.begin() + fit, a.end()}, {b.begin() + fit, b.end()}), 1e-3);
}

TEST(Architectures, ConfigFactsOfEachArchitecture) {
    std::map<std::string, model::ModelConfig> c;
    for (const Variant& v : variants()) {
        Harness h(path_of(v), backend::make_cpu_backend(1));
        c[v.tag] = h.model->config();
        if (v.tag == "gemma3") {
            // Local layers rotate with base 10000 unscaled, the global one with 1e6 scaled by 1/8.
            EXPECT_NE(h.model->rope(0).inv_freq[1], h.model->rope(1).inv_freq[1]);
            EXPECT_EQ(h.model->rope(0).position_scale, 1.0f);
            EXPECT_EQ(h.model->rope(1).position_scale, 0.125f);
            EXPECT_EQ(h.model->rope(0).inv_freq, h.model->rope(2).inv_freq);
        }
        if (v.tag == "phi3") {  // the attention factor scales the rotation, not a re-rotation
            EXPECT_FLOAT_EQ(h.model->rope(0).mscale, 1.19f);
            EXPECT_EQ(h.model->rerotation_rope(0).mscale, 1.0f);
        }
    }
    EXPECT_TRUE(c["llama"].rope.freq_factors.empty());
    ASSERT_EQ(c["llama3"].rope.freq_factors.size(), 8u);
    EXPECT_EQ(c["llama3"].rope.freq_factors.front(), 1.0f);  // high frequencies unscaled
    EXPECT_EQ(c["llama3"].rope.freq_factors.back(), 8.0f);   // low ones by the factor
    EXPECT_TRUE(c["qwen2"].qkv_bias);
    EXPECT_EQ(c["qwen3"].head_dim, 32);
    EXPECT_EQ(c["qwen3"].q_dim(), 128);  // != hidden 64
    EXPECT_TRUE(c["qwen3"].traits().qk_norm);
    EXPECT_EQ(c["qwen3"].rope.pairing, model::RopePairing::kNeox);

    const model::ModelConfig& g = c["gemma3"];
    EXPECT_EQ(g.sliding_window, 8);
    EXPECT_EQ(g.layer_sliding, (std::vector<uint8_t>{1, 0, 1}));  // every 2nd layer global
    EXPECT_EQ(g.rope.freq_base, 1000000.0f);
    EXPECT_EQ(g.rope_local.freq_base, 10000.0f);
    EXPECT_EQ(g.rope.linear_scale, 0.125f);
    EXPECT_EQ(g.rope_local.linear_scale, 1.0f);
    EXPECT_FLOAT_EQ(g.attention_scale, 1.0f / std::sqrt(32.0f));  // key_length, not hidden / heads
    EXPECT_FLOAT_EQ(g.embedding_scale, 8.0f);                     // sqrt(64)
    EXPECT_EQ(g.traits().activation, model::FfnActivation::kGeluTanh);
    EXPECT_EQ(c["gemma3-global-softcap"].sliding_window, 0);
    EXPECT_EQ(c["gemma3-global-softcap"].final_logit_softcap, 3.0f);

    const model::ModelConfig& p = c["phi3"];
    EXPECT_TRUE(p.fused_qkv);
    ASSERT_EQ(p.rope.freq_factors.size(), 8u);
    EXPECT_EQ(p.rope.freq_factors.back(), 6.0f);  // the long factors: context 512 > original 128
    EXPECT_FLOAT_EQ(p.attention_scale, 0.25f);
    EXPECT_FLOAT_EQ(p.rope.attn_factor, 1.19f);
    EXPECT_EQ(c["phi3-partial"].rope.num_rotary_dims, 12);
    EXPECT_EQ(c["phi3-partial"].rope.freq_factors.size(), 6u);
    EXPECT_NE(p.describe().find("fused qkv"), std::string::npos);
    EXPECT_NE(g.describe().find("sliding window: 8 tokens on 2 of 3 layers"), std::string::npos) << g.describe();
}

TEST(Architectures, UnknownArchitectureIsRefusedByName) {
    loader::GgufWriter w;
    w.add_string("general.architecture", "mamba2");
    w.add_u32("mamba2.block_count", 1);
    const std::string path = ::testing::TempDir() + "/unknown-arch.gguf";
    ASSERT_TRUE(w.write(path).ok());
    auto be = backend::make_cpu_backend(1);
    auto m = model::Model::load(path, be.get());
    ASSERT_FALSE(m.ok());
    EXPECT_EQ(m.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(m.status().message().find("'mamba2'"), std::string::npos) << m.status().message();
    EXPECT_NE(m.status().message().find("gemma3"), std::string::npos) << "names what is supported";
}

TEST(Architectures, MissingTensorIsRefusedByName) {
    const std::pair<std::string, std::string> cases[] = {
        {"qwen3", "blk.1.attn_q_norm.weight"},
        {"gemma3", "blk.2.post_ffw_norm.weight"},
        {"gemma3", "blk.0.post_attention_norm.weight"},
        {"phi3", "blk.0.attn_qkv.weight"},
        {"phi3", "blk.2.ffn_up.weight"},
        {"llama", "blk.1.ffn_gate.weight"},
    };
    for (const auto& [arch, tensor] : cases) {
        auto o = base(arch);
        if (arch != "llama" && arch != "phi3") o.head_dim = 32;
        o.omit_tensor = tensor;
        const std::string path = testing::synthetic_model_path(o, "missing-" + tensor);
        auto be = backend::make_cpu_backend(1);
        auto m = model::Model::load(path, be.get());
        ASSERT_FALSE(m.ok()) << tensor;
        EXPECT_EQ(m.status().code(), StatusCode::kNotFound) << m.status().to_string();
        EXPECT_NE(m.status().message().find("'" + tensor + "'"), std::string::npos) << m.status().message();
    }
}

}  // namespace
}  // namespace lazyattn
