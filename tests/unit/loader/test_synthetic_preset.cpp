// synthetic:NAME models: the spec grammar, the real shapes the presets promise, and the in-memory
// image (a loadable GGUF with the embedded model's tokenizer, deterministic per seed, built once).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "loader/gguf_file.h"
#include "model/model_config.h"
#include "synthetic/synthetic_preset.h"

namespace lazyattn::synthetic {
namespace {

using namespace lazyattn::loader;

TEST(SyntheticPreset, SpecsParseAndBadOnesNameTheChoices) {
    auto s = parse_synthetic_spec("synthetic:llama-8b");
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    EXPECT_EQ(s->preset.name, "llama-8b");
    EXPECT_EQ(s->weight_type, GgmlType::kQ4_K);
    EXPECT_EQ(s->seed, 1u);
    auto t = parse_synthetic_spec("synthetic:Qwen-7B:F16:seed=42");
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(t->preset.name, "qwen-7b");
    EXPECT_EQ(t->weight_type, GgmlType::kF16);
    EXPECT_EQ(t->seed, 42u);
    EXPECT_EQ(t->canonical(), "synthetic:qwen-7b:F16:seed=42");

    auto unknown = parse_synthetic_spec("synthetic:gpt-5");
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.status().message().find("llama-1b"), std::string::npos) << unknown.status().to_string();
    auto bad_type = parse_synthetic_spec("synthetic:tiny:q9_9");
    ASSERT_FALSE(bad_type.ok());
    EXPECT_NE(bad_type.status().message().find("q4_k"), std::string::npos) << bad_type.status().to_string();
    EXPECT_FALSE(parse_synthetic_spec("synthetic:tiny:seed=x").ok());
    EXPECT_FALSE(parse_synthetic_spec("synthetic:tiny:seed=99999999999999999999").ok());
    EXPECT_FALSE(parse_synthetic_spec("synthetic:tiny:f16:f32").ok());  // two types
    EXPECT_FALSE(parse_synthetic_spec("llama-1b").ok());
}

TEST(SyntheticPreset, ShapesAreTheRealModels) {
    auto find = [](const std::string& name) {
        for (const auto& p : synthetic_presets()) {
            if (p.name == name) return p;
        }
        ADD_FAILURE() << name;
        return synthetic_presets().front();
    };
    const SyntheticPreset l1 = find("llama-1b"), l8 = find("llama-8b"), q7 = find("qwen-7b");
    EXPECT_EQ(
        std::make_tuple(l1.num_layers, l1.hidden, l1.num_heads, l1.num_kv_heads, l1.head_dim, l1.ffn, l1.vocab_size),
        std::make_tuple(16, 2048, 32, 8, 128, 8192, 128256));
    EXPECT_EQ(
        std::make_tuple(l8.num_layers, l8.hidden, l8.num_heads, l8.num_kv_heads, l8.head_dim, l8.ffn, l8.vocab_size),
        std::make_tuple(32, 4096, 32, 8, 128, 14336, 128256));
    EXPECT_EQ(std::make_tuple(q7.num_layers, q7.hidden, q7.num_heads, q7.num_kv_heads, q7.ffn, q7.vocab_size),
              std::make_tuple(28, 3584, 28, 4, 18944, 152064));
    // Llama-3.1-8B has 8.03 B parameters.
    EXPECT_NEAR(double(l8.num_parameters()) / 1e9, 8.03, 0.01);
}

TEST(SyntheticPreset, TheImageLoadsWithTheEmbeddedTokenizerAndIsDeterministic) {
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no embedded model (make deps)";
    auto tok = GgufFile::open(LAZYATTN_MODEL_PATH);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    auto a = parse_synthetic_spec("synthetic:tiny:q8_0:seed=7");
    ASSERT_TRUE(a.ok());
    auto path = materialize_synthetic_model(*a, **tok, 2);
    ASSERT_TRUE(path.ok()) << path.status().to_string();
    auto again = materialize_synthetic_model(*a, **tok, 1);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *path);  // built once per process

    auto f = GgufFile::open(*path);
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    auto c = model::ModelConfig::from_gguf(**f);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->num_layers, 2);
    EXPECT_EQ(c->hidden_dim, 256);
    EXPECT_EQ(c->vocab_size, 49408);
    const auto tokens = (*f)->get_string_array("tokenizer.ggml.tokens").value();
    const auto real = (*tok)->get_string_array("tokenizer.ggml.tokens").value();
    ASSERT_EQ(tokens.size(), 49408u);
    EXPECT_TRUE(std::equal(real.begin(), real.end(), tokens.begin()));  // the real vocabulary, then padding
    EXPECT_EQ(tokens.back(), "<oov_49407>");
    const GgufTensorInfo* q = (*f)->find_tensor("blk.1.attn_q.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->type, GgmlType::kQ8_0);

    // Another seed: other weights; the same seed on other thread counts: the same (checked above
    // by the cache only, so build a third spec differing in seed and compare one tensor).
    auto b = parse_synthetic_spec("synthetic:tiny:q8_0:seed=8");
    auto other = materialize_synthetic_model(*b, **tok, 2);
    ASSERT_TRUE(other.ok());
    auto g = GgufFile::open(*other);
    ASSERT_TRUE(g.ok());
    const GgufTensorInfo* q2 = (*g)->find_tensor("blk.1.attn_q.weight");
    ASSERT_NE(q2, nullptr);
    EXPECT_NE(std::memcmp((*f)->tensor_data(*q), (*g)->tensor_data(*q2), 256), 0);

    EXPECT_FALSE(resolve_model_source("synthetic:tiny", "", 1).ok());  // no tokenizer source: says so
    EXPECT_EQ(resolve_model_source("plain.gguf", "", 1).value(), "plain.gguf");
}

}  // namespace
}  // namespace lazyattn::synthetic

namespace lazyattn::synthetic {
namespace {

using namespace lazyattn::loader;

// The GPU bundle's tokenizer source: SmolLM2's vocabulary alone, which a synthetic model takes
// in place of the whole model file.
TEST(SyntheticPreset, AVocabularyOnlyFileServesAsTheTokenizerSource) {
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "no embedded model (make deps)";
    auto model = GgufFile::open(LAZYATTN_MODEL_PATH);
    ASSERT_TRUE(model.ok());
    const std::string path =
        (std::filesystem::temp_directory_path() / ("lazyattn-vocab-" + std::to_string(::getpid()) + ".gguf")).string();
    ASSERT_TRUE(write_vocabulary_gguf(**model, path).ok());
    auto vocab = GgufFile::open(path);
    ASSERT_TRUE(vocab.ok()) << vocab.status().to_string();
    EXPECT_TRUE((*vocab)->tensors().empty());
    EXPECT_LT(std::filesystem::file_size(path), 4u << 20);
    EXPECT_EQ((*vocab)->get_string_array("tokenizer.ggml.tokens").value(),
              (*model)->get_string_array("tokenizer.ggml.tokens").value());
    EXPECT_EQ((*vocab)->get_string_array("tokenizer.ggml.merges").value(),
              (*model)->get_string_array("tokenizer.ggml.merges").value());
    auto spec = parse_synthetic_spec("synthetic:tiny:q8_0:seed=3");
    auto image = materialize_synthetic_model(*spec, **vocab, 1);
    ASSERT_TRUE(image.ok()) << image.status().to_string();
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace lazyattn::synthetic
