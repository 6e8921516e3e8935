// Every in-place weight type loads without an fp32 copy (test_model_forward.cpp checks the
// forward pass on each against the reference backend); a file holding a type without a kernel is refused with
// the tensor's name, its type and the supported list.
#include <cstring>
#include <fstream>
#include <iterator>

#include "loader/dequantize.h"
#include "loader/gguf_file.h"
#include "loader/quantize.h"
#include "model/model_weights.h"
#include "random_inputs.h"
#include "synthetic_model_fixture.h"

namespace lazyattn {
namespace {

synthetic::SyntheticModelOptions options_for(loader::GgmlType t) {
    synthetic::SyntheticModelOptions o;
    o.seed = 21;
    o.weight_type = t;
    o.tied_embeddings = false;
    o.hidden = 256;  // a multiple of the K-quant super-block
    o.ffn = 512;
    return o;
}

// The K-quant quantizers (fixtures for these tests and benchmarks) round-trip through
// loader::dequantize_row with the error their bit width allows.
TEST(ModelWeightTypes, KQuantQuantizersRoundTrip) {
    std::mt19937_64 rng(testing::test_seed() + 30);
    const int64_t n = 4096;
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(n);
    for (auto& v : x) v = normal(rng);
    const std::pair<loader::GgmlType, double> bounds[] = {{loader::GgmlType::kQ2_K, 0.45},
                                                          {loader::GgmlType::kQ3_K, 0.25},
                                                          {loader::GgmlType::kQ4_K, 0.12},
                                                          {loader::GgmlType::kQ5_K, 0.06},
                                                          {loader::GgmlType::kQ6_K, 0.03}};
    for (const auto& [t, bound] : bounds) {
        auto q = loader::quantize(t, x.data(), n);
        ASSERT_TRUE(q.ok());
        std::vector<float> back(n);
        ASSERT_TRUE(loader::dequantize_row(t, q->data(), back.data(), n).ok());
        double err = 0.0;
        for (int64_t i = 0; i < n; ++i) err += double(back[i] - x[i]) * (back[i] - x[i]);
        EXPECT_LT(std::sqrt(err / n), bound) << loader::ggml_type_name(t);
    }
}

TEST(ModelWeightTypes, MatricesStayInTheMappedFile) {
    for (auto t : {loader::GgmlType::kF32, loader::GgmlType::kF16, loader::GgmlType::kBF16, loader::GgmlType::kQ5_0,
                   loader::GgmlType::kQ5_1, loader::GgmlType::kQ8_0, loader::GgmlType::kQ2_K, loader::GgmlType::kQ3_K,
                   loader::GgmlType::kQ4_K, loader::GgmlType::kQ5_K, loader::GgmlType::kQ6_K}) {
        const std::string path =
            testing::synthetic_model_path(options_for(t), std::string("types-") + loader::ggml_type_name(t));
        auto file = loader::GgufFile::open(path);
        ASSERT_TRUE(file.ok());
        auto config = model::ModelConfig::from_gguf(**file);
        ASSERT_TRUE(config.ok());
        auto w = model::load_weights(**file, *config);
        ASSERT_TRUE(w.ok()) << w.status().to_string();
        for (const model::Linear* lin : {&w->token_embd, &w->lm_head, &w->layers[0].wq, &w->layers[1].w_down}) {
            EXPECT_TRUE(lin->w_f32.empty()) << loader::ggml_type_name(t);
            EXPECT_NE(lin->w_quant, nullptr);
            EXPECT_EQ(static_cast<uint32_t>(lin->type), static_cast<uint32_t>(t));
        }
    }
}

// A Q4_0 model whose attn_q of layer 0 is relabelled IQ4_NL (same block geometry): the file
// parses, loading refuses it by name.
TEST(ModelWeightTypes, UnsupportedTypeIsRefusedByName) {
    const std::string src = testing::synthetic_model_path(options_for(loader::GgmlType::kQ4_0), "types-Q4_0");
    std::ifstream in(src, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string name = "blk.0.attn_q.weight";
    size_t at = bytes.find(name);
    ASSERT_NE(at, std::string::npos);
    at += name.size();
    uint32_t n_dims;
    std::memcpy(&n_dims, bytes.data() + at, 4);
    at += 4 + 8 * n_dims;
    uint32_t type;
    std::memcpy(&type, bytes.data() + at, 4);
    ASSERT_EQ(type, 2u);
    type = 20;  // IQ4_NL
    std::memcpy(bytes.data() + at, &type, 4);
    const std::string path = ::testing::TempDir() + "/iq4_nl.gguf";
    std::ofstream(path, std::ios::binary) << bytes;

    auto file = loader::GgufFile::open(path);
    ASSERT_TRUE(file.ok()) << file.status().to_string();
    auto config = model::ModelConfig::from_gguf(**file);
    ASSERT_TRUE(config.ok());
    auto w = model::load_weights(**file, *config);
    ASSERT_FALSE(w.ok());
    EXPECT_EQ(w.status().code(), StatusCode::kUnsupported);
    const std::string msg = w.status().message();
    EXPECT_NE(msg.find(name), std::string::npos) << msg;
    EXPECT_NE(msg.find("IQ4_NL"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Q4_K"), std::string::npos) << msg;
}

}  // namespace
}  // namespace lazyattn
