// ModelConfig::from_gguf on hand-written metadata: required keys, defaults, architecture table,
// RoPE scaling and frequency factors, consistency checks; validate() and describe() directly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "loader/gguf_file.h"
#include "loader/gguf_writer.h"
#include "model/model_config.h"

namespace lazyattn::model {
namespace {

using loader::GgmlType;
using loader::GgufFile;
using loader::GgufWriter;

struct Built {
    std::vector<uint8_t> bytes;
    std::unique_ptr<GgufFile> file;
};

// A minimal model description: arch keys plus whatever `extra` adds (keys and tensors).
Built build(const std::string& arch, const std::function<void(GgufWriter&)>& extra, bool with_defaults = true) {
    GgufWriter w;
    w.add_string("general.architecture", arch);
    w.add_string("general.name", "unit");
    if (with_defaults) {
        w.add_u32(arch + ".block_count", 3);
        w.add_u32(arch + ".embedding_length", 128);
        w.add_u32(arch + ".feed_forward_length", 256);
        w.add_u32(arch + ".attention.head_count", 8);
        w.add_u32(arch + ".context_length", 2048);
        w.add_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
        w.add_u32(arch + ".vocab_size", 1000);
    }
    if (extra) extra(w);
    Built b;
    b.bytes = w.to_bytes();
    auto f = GgufFile::parse(b.bytes.data(), b.bytes.size());
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    if (f.ok()) b.file = std::move(f).value();
    return b;
}

Expected<ModelConfig> config_of(const std::string& arch, const std::function<void(GgufWriter&)>& extra,
                                bool with_defaults = true) {
    Built b = build(arch, extra, with_defaults);
    if (!b.file) return internal_error("parse failed");
    return ModelConfig::from_gguf(*b.file);
}

TEST(ModelConfig, LlamaWithDefaults) {
    auto c = config_of("llama", nullptr);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->arch, Architecture::kLlama);
    EXPECT_EQ(c->arch_name, "llama");
    EXPECT_EQ(c->name, "unit");
    EXPECT_EQ(c->num_layers, 3);
    EXPECT_EQ(c->hidden_dim, 128);
    EXPECT_EQ(c->ffn_dim, 256);
    EXPECT_EQ(c->num_heads, 8);
    EXPECT_EQ(c->num_kv_heads, 8);  // default: head_count
    EXPECT_EQ(c->head_dim, 16);
    EXPECT_EQ(c->vocab_size, 1000);
    EXPECT_EQ(c->context_length, 2048);
    EXPECT_FLOAT_EQ(c->norm_eps, 1e-6f);
    EXPECT_EQ(c->rope.freq_base, 10000.0f);  // default
    EXPECT_EQ(c->rope.num_rotary_dims, 16);  // default: head_dim
    EXPECT_EQ(c->rope.pairing, RopePairing::kInterleaved);
    EXPECT_EQ(c->rope.linear_scale, 1.0f);
    EXPECT_TRUE(c->rope.freq_factors.empty());
    EXPECT_FALSE(c->qkv_bias);
    EXPECT_TRUE(c->tied_embeddings);
    EXPECT_TRUE(c->validate().ok());
}

TEST(ModelConfig, Qwen2ExplicitKeysBiasAndOutput) {
    auto c = config_of("qwen2", [](GgufWriter& w) {
        w.add_u32("qwen2.attention.head_count_kv", 2);
        w.add_f32("qwen2.rope.freq_base", 1000000.0f);
        w.add_u32("qwen2.rope.dimension_count", 8);
        w.add_tensor_f32("blk.0.attn_q.bias", {128}, std::vector<float>(128, 0.0f));
        w.add_tensor_f32("output.weight", {128, 1000}, std::vector<float>(128 * 1000, 0.0f));
    });
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->arch, Architecture::kQwen2);
    EXPECT_EQ(c->num_kv_heads, 2);
    EXPECT_EQ(c->rope.freq_base, 1000000.0f);
    EXPECT_EQ(c->rope.num_rotary_dims, 8);
    EXPECT_EQ(c->rope.pairing, RopePairing::kNeox);
    EXPECT_TRUE(c->qkv_bias);
    EXPECT_FALSE(c->tied_embeddings);
}

TEST(ModelConfig, VocabFromTokenList) {
    auto c = config_of(
        "llama",
        [](GgufWriter& w) {
            w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "c", "d", "e"});
        },
        false);
    EXPECT_FALSE(c.ok());  // required keys missing
    auto ok = config_of(
        "llama",
        [](GgufWriter& w) {
            w.add_u32("llama.block_count", 1);
            w.add_u32("llama.embedding_length", 64);
            w.add_u32("llama.feed_forward_length", 64);
            w.add_u32("llama.attention.head_count", 4);
            w.add_u32("llama.context_length", 128);
            w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
            w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "c", "d", "e"});
        },
        false);
    ASSERT_TRUE(ok.ok()) << ok.status().to_string();
    EXPECT_EQ(ok->vocab_size, 5);
}

TEST(ModelConfig, LinearRopeScaling) {
    auto c = config_of("llama", [](GgufWriter& w) {
        w.add_string("llama.rope.scaling.type", "linear");
        w.add_f32("llama.rope.scaling.factor", 4.0f);
    });
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->rope.linear_scale, 0.25f);

    auto none = config_of("llama", [](GgufWriter& w) { w.add_string("llama.rope.scaling.type", "none"); });
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(none->rope.linear_scale, 1.0f);

    auto legacy = config_of("llama", [](GgufWriter& w) { w.add_f32("llama.rope.scale_linear", 2.0f); });
    ASSERT_TRUE(legacy.ok());
    EXPECT_EQ(legacy->rope.linear_scale, 0.5f);

    auto yarn = config_of("llama", [](GgufWriter& w) { w.add_string("llama.rope.scaling.type", "yarn"); });
    ASSERT_FALSE(yarn.ok());
    EXPECT_EQ(yarn.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(yarn.status().message().find("yarn"), std::string::npos);

    auto zero = config_of("llama", [](GgufWriter& w) {
        w.add_string("llama.rope.scaling.type", "linear");
        w.add_f32("llama.rope.scaling.factor", 0.0f);
    });
    EXPECT_FALSE(zero.ok());
}

TEST(ModelConfig, FreqFactorsFromTensor) {
    auto c = config_of("llama", [](GgufWriter& w) {
        w.add_tensor_f32("rope_freqs.weight", {8}, {1, 1, 2, 2, 4, 4, 8, 8});
    });
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->rope.freq_factors, (std::vector<float>{1, 1, 2, 2, 4, 4, 8, 8}));

    auto wrong = config_of("llama", [](GgufWriter& w) {
        w.add_tensor_f32("rope_freqs.weight", {6}, {1, 1, 1, 1, 1, 1});
    });
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.status().message().find("rope_freqs.weight"), std::string::npos);
}

TEST(ModelConfig, Errors) {
    auto arch = config_of("gpt2", nullptr);
    ASSERT_FALSE(arch.ok());
    EXPECT_EQ(arch.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(arch.status().message().find("'gpt2'"), std::string::npos);

    auto missing = config_of(
        "llama", [](GgufWriter& w) { w.add_u32("llama.vocab_size", 5); }, false);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
    EXPECT_NE(missing.status().message().find("llama.block_count"), std::string::npos);

    auto groups = config_of("llama", [](GgufWriter& w) { w.add_u32("llama.attention.head_count_kv", 3); });
    ASSERT_FALSE(groups.ok());
    EXPECT_NE(groups.status().message().find("num_kv_heads 3"), std::string::npos) << groups.status().message();

    auto odd_rot = config_of("llama", [](GgufWriter& w) { w.add_u32("llama.rope.dimension_count", 7); });
    EXPECT_FALSE(odd_rot.ok());
    auto wide_rot = config_of("llama", [](GgufWriter& w) { w.add_u32("llama.rope.dimension_count", 32); });
    EXPECT_FALSE(wide_rot.ok());

    // A head size other than hidden / heads is fine (Qwen3, Gemma 3); K and V sizes must agree.
    auto key_len = config_of("llama", [](GgufWriter& w) { w.add_u32("llama.attention.key_length", 32); });
    ASSERT_TRUE(key_len.ok()) << key_len.status().to_string();
    EXPECT_EQ(key_len->head_dim, 32);
    EXPECT_EQ(key_len->q_dim(), 256);
    EXPECT_FALSE(key_len->rope.num_rotary_dims == 16) << "rotary dims default to the head size";
    auto value_len = config_of("llama", [](GgufWriter& w) {
        w.add_u32("llama.attention.key_length", 32);
        w.add_u32("llama.attention.value_length", 16);
    });
    ASSERT_FALSE(value_len.ok());
    EXPECT_EQ(value_len.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(value_len.status().message().find("value_length"), std::string::npos);

    auto yarn = config_of("qwen3", [](GgufWriter& w) { w.add_string("qwen3.rope.scaling.type", "yarn"); });
    ASSERT_FALSE(yarn.ok());
    EXPECT_EQ(yarn.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(yarn.status().message().find("'yarn'"), std::string::npos);

    auto type = config_of("llama", [](GgufWriter& w) { w.add_string("llama.attention.head_count_kv", "2"); });
    ASSERT_FALSE(type.ok());
    EXPECT_EQ(type.status().code(), StatusCode::kCorrupt);

    auto embd = config_of("llama", [](GgufWriter& w) {
        w.add_tensor_f32("token_embd.weight", {128, 999}, std::vector<float>(128 * 999, 0.0f));
    });
    ASSERT_FALSE(embd.ok());
    EXPECT_NE(embd.status().message().find("token_embd.weight has shape [128, 999]"), std::string::npos)
        << embd.status().message();
}

// A GGUF array of bools (as llama.cpp's converter writes per-layer sliding-window flags).
void add_bool_array(GgufWriter& w, const std::string& key, const std::vector<bool>& values) {
    std::vector<uint8_t> payload(12 + values.size());
    const uint32_t type = 7;  // bool
    const uint64_t count = values.size();
    std::memcpy(payload.data(), &type, 4);
    std::memcpy(payload.data() + 4, &count, 8);
    for (size_t i = 0; i < values.size(); ++i) payload[12 + i] = values[i] ? 1 : 0;
    w.add_raw(key, 9 /* array */, payload);
}

// Gemma 3: windows on all but every 6th layer by default, or as the pattern or a per-layer
// array says; the local layers' RoPE base and the score scale.
TEST(ModelConfig, Gemma3SlidingWindowLayersAndScales) {
    // The default keys of build() with another layer count.
    auto gemma_keys = [](GgufWriter& w, uint32_t layers) {
        w.add_u32("gemma3.block_count", layers);
        w.add_u32("gemma3.embedding_length", 128);
        w.add_u32("gemma3.feed_forward_length", 256);
        w.add_u32("gemma3.attention.head_count", 8);
        w.add_u32("gemma3.context_length", 2048);
        w.add_f32("gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
        w.add_u32("gemma3.vocab_size", 1000);
    };
    auto c = config_of(
        "gemma3",
        [&](GgufWriter& w) {
            gemma_keys(w, 13);
            w.add_u32("gemma3.attention.key_length", 64);
            w.add_u32("gemma3.attention.sliding_window", 512);
            w.add_f32("gemma3.rope.freq_base", 1e6f);
        },
        false);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->sliding_window, 512);
    EXPECT_EQ(c->layer_sliding, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1}));
    EXPECT_EQ(c->rope_local.freq_base, 10000.0f);
    EXPECT_EQ(c->rope.freq_base, 1e6f);
    EXPECT_EQ(c->rope_of(5).freq_base, 1e6f);
    EXPECT_EQ(c->rope_of(4).freq_base, 10000.0f);
    EXPECT_FLOAT_EQ(c->attention_scale, 0.125f);  // 1/sqrt(key_length)
    EXPECT_FLOAT_EQ(c->embedding_scale, std::sqrt(128.0f));
    EXPECT_EQ(c->rope.pairing, RopePairing::kNeox);

    auto flags = config_of("gemma3", [](GgufWriter& w) {
        w.add_u32("gemma3.attention.sliding_window", 4);
        add_bool_array(w, "gemma3.attention.sliding_window_pattern", {false, true, false});
        w.add_f32("gemma3.rope.freq_base_swa", 5000.0f);
    });
    ASSERT_TRUE(flags.ok()) << flags.status().to_string();
    EXPECT_EQ(flags->layer_sliding, (std::vector<uint8_t>{0, 1, 0}));
    EXPECT_EQ(flags->rope_local.freq_base, 5000.0f);

    auto short_flags = config_of("gemma3", [](GgufWriter& w) {
        w.add_u32("gemma3.attention.sliding_window", 4);
        add_bool_array(w, "gemma3.attention.sliding_window_pattern", {false, true});
    });
    ASSERT_FALSE(short_flags.ok());
    EXPECT_NE(short_flags.status().message().find("2 entries for 3 layers"), std::string::npos);

    auto no_window = config_of("gemma3", nullptr);  // no sliding_window key: every layer global
    ASSERT_TRUE(no_window.ok());
    EXPECT_EQ(no_window->sliding_window, 0);
    EXPECT_FALSE(no_window->is_sliding(0));

    // The 27B model (62 layers) scales scores by hidden / heads, not the head size.
    auto big = config_of(
        "gemma3",
        [&](GgufWriter& w) {
            gemma_keys(w, 62);
            w.add_u32("gemma3.attention.key_length", 32);
        },
        false);
    ASSERT_TRUE(big.ok());
    EXPECT_FLOAT_EQ(big->attention_scale, 0.25f);  // 1/sqrt(128 / 8)
}

// Phi-3: the long factors when the context exceeds the original one, else the short ones; the
// attention factor kept for the rotation (RopeParams::mscale).
TEST(ModelConfig, Phi3LongAndShortRopeFactors) {
    for (const int32_t original : {1024, 4096}) {
        auto c = config_of("phi3", [&](GgufWriter& w) {
            w.add_u32("phi3.rope.scaling.original_context_length", uint32_t(original));
            w.add_f32("phi3.rope.scaling.attn_factor", 1.2f);
            w.add_tensor_f32("rope_factors_long.weight", {8}, std::vector<float>(8, 4.0f));
            w.add_tensor_f32("rope_factors_short.weight", {8}, std::vector<float>(8, 1.5f));
        });
        ASSERT_TRUE(c.ok()) << c.status().to_string();
        ASSERT_EQ(c->rope.freq_factors.size(), 8u);
        EXPECT_EQ(c->rope.freq_factors[0], original < 2048 ? 4.0f : 1.5f) << "context 2048, original " << original;
        EXPECT_FLOAT_EQ(c->attention_scale, 0.25f);
        EXPECT_FLOAT_EQ(c->rope.attn_factor, 1.2f);
    }
}

TEST(ModelConfig, ContextLengthOutOfInt32Range) {
    auto c = config_of(
        "llama",
        [](GgufWriter& w) {
            w.add_u32("llama.block_count", 1);
            w.add_u32("llama.embedding_length", 64);
            w.add_u32("llama.feed_forward_length", 64);
            w.add_u32("llama.attention.head_count", 4);
            w.add_u64("llama.context_length", 1ull << 40);
            w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
            w.add_u32("llama.vocab_size", 10);
        },
        false);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kOutOfRange);
}

ModelConfig valid_config() {
    ModelConfig c;
    c.arch_name = "llama";
    c.num_layers = 2;
    c.hidden_dim = 64;
    c.ffn_dim = 128;
    c.num_heads = 4;
    c.num_kv_heads = 2;
    c.head_dim = 16;
    c.vocab_size = 100;
    c.context_length = 256;
    c.rope.num_rotary_dims = 16;
    c.attention_scale = 0.25f;
    return c;
}

TEST(ModelConfig, ValidateChecksEachInvariant) {
    EXPECT_TRUE(valid_config().validate().ok());
    const std::vector<std::pair<std::string, std::function<void(ModelConfig&)>>> breakers = {
        {"num_layers", [](ModelConfig& c) { c.num_layers = 0; }},
        {"hidden_dim", [](ModelConfig& c) { c.hidden_dim = 0; }},
        {"attention_scale", [](ModelConfig& c) { c.attention_scale = 0.0f; }},
        {"sliding_window", [](ModelConfig& c) { c.sliding_window = 4; }},  // no per-layer flags
        {"ffn_dim", [](ModelConfig& c) { c.ffn_dim = -1; }},
        {"num_kv_heads", [](ModelConfig& c) { c.num_kv_heads = 3; }},
        {"vocab_size", [](ModelConfig& c) { c.vocab_size = 0; }},
        {"context_length", [](ModelConfig& c) { c.context_length = 0; }},
        {"rotary dims", [](ModelConfig& c) { c.rope.num_rotary_dims = 15; }},
        {"rotary dims", [](ModelConfig& c) { c.rope.num_rotary_dims = 18; }},
        {"freq_base", [](ModelConfig& c) { c.rope.freq_base = 0.0f; }},
        {"linear_scale", [](ModelConfig& c) { c.rope.linear_scale = -1.0f; }},
        {"freq_factors",
         [](ModelConfig& c) {
             c.rope.freq_factors = {1.0f, 2.0f};
         }},
        {"norm_eps", [](ModelConfig& c) { c.norm_eps = 0.0f; }},
    };
    for (const auto& [what, brk] : breakers) {
        ModelConfig c = valid_config();
        brk(c);
        const Status st = c.validate();
        ASSERT_FALSE(st.ok()) << what;
        EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
        EXPECT_NE(st.message().find(what), std::string::npos) << what << ": " << st.message();
    }
}

TEST(ModelConfig, DescribeMentionsEveryField) {
    ModelConfig c = valid_config();
    c.name = "tiny";
    c.tied_embeddings = true;
    c.rope.pairing = RopePairing::kNeox;
    c.rope.freq_base = 500000.0f;
    c.rope.linear_scale = 0.5f;
    const std::string d = c.describe();
    for (const char* part : {"tiny", "llama", "layers:         2", "hidden:         64", "ffn:            128",
                             "4 query, 2 kv (group 2), head_dim 16", "vocab:          100", "context:        256",
                             "base 500000", "16 dims", "neox", "linear scale 0.5", "tied"}) {
        EXPECT_NE(d.find(part), std::string::npos) << "missing '" << part << "' in\n" << d;
    }
    EXPECT_GE(std::count(d.begin(), d.end(), '\n'), 10);
}

}  // namespace
}  // namespace lazyattn::model
