// The real SmolLM2-135M-Instruct Q4_1 file (skipped when absent): structure, configuration and
// dequantized values compared with gguf-py's independent numpy dequantizer (values recorded
// once with gguf 0.19: `gguf.quants.dequantize(tensor.data, tensor.tensor_type)`).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "loader/dequantize.h"
#include "loader/gguf_file.h"
#include "model/model_config.h"

namespace lazyattn::loader {
namespace {

class RealModel : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) return;
        auto f = GgufFile::open(LAZYATTN_MODEL_PATH);
        ASSERT_TRUE(f.ok()) << f.status().to_string();
        file_ = std::move(f).value().release();
    }
    static void TearDownTestSuite() {
        delete file_;
        file_ = nullptr;
    }
    void SetUp() override {
        if (file_ == nullptr) GTEST_SKIP() << "model not found at " << LAZYATTN_MODEL_PATH;
    }
    // Row `row` of a 2-D tensor, dequantized.
    static std::vector<float> row(const std::string& name, int64_t r) {
        const GgufTensorInfo* t = file_->find_tensor(name);
        EXPECT_NE(t, nullptr) << name;
        if (t == nullptr) return {};
        const int64_t n = t->dims[0];
        const size_t row_bytes = ggml_row_size(t->type, n);
        std::vector<float> out(static_cast<size_t>(n));
        const Status st =
            dequantize_row(t->type, file_->tensor_data(*t) + row_bytes * static_cast<size_t>(r), out.data(), n);
        EXPECT_TRUE(st.ok()) << st.to_string();
        return out;
    }
    static GgufFile* file_;
};

GgufFile* RealModel::file_ = nullptr;

TEST_F(RealModel, Structure) {
    EXPECT_EQ(file_->version(), 3u);
    EXPECT_EQ(file_->tensors().size(), 272u);
    EXPECT_EQ(file_->alignment(), 32u);
    EXPECT_EQ(file_->metadata().size(), 33u);
    EXPECT_EQ(file_->get_string_array("tokenizer.ggml.tokens")->size(), 49152u);
    EXPECT_EQ(file_->get_string_array("tokenizer.ggml.merges")->size(), 48900u);
    EXPECT_EQ(file_->get_string("tokenizer.ggml.pre").value(), "smollm");
    const GgufTensorInfo* embd = file_->find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->type, GgmlType::kQ8_0);
    EXPECT_EQ(embd->dims, (std::vector<int64_t>{576, 49152}));
    EXPECT_EQ(file_->find_tensor("blk.0.attn_q.weight")->type, GgmlType::kQ4_1);
    EXPECT_EQ(file_->find_tensor("blk.29.ffn_down.weight")->dims, (std::vector<int64_t>{1536, 576}));
    EXPECT_EQ(file_->find_tensor("output.weight"), nullptr);
}

TEST_F(RealModel, Config) {
    auto c = model::ModelConfig::from_gguf(*file_);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->arch, model::Architecture::kLlama);
    EXPECT_EQ(c->num_layers, 30);
    EXPECT_EQ(c->hidden_dim, 576);
    EXPECT_EQ(c->ffn_dim, 1536);
    EXPECT_EQ(c->num_heads, 9);
    EXPECT_EQ(c->num_kv_heads, 3);
    EXPECT_EQ(c->head_dim, 64);
    EXPECT_EQ(c->vocab_size, 49152);
    EXPECT_EQ(c->context_length, 8192);
    EXPECT_EQ(c->rope.freq_base, 100000.0f);
    EXPECT_EQ(c->rope.num_rotary_dims, 64);
    EXPECT_EQ(c->rope.pairing, model::RopePairing::kInterleaved);
    EXPECT_FLOAT_EQ(c->norm_eps, 1e-5f);
    EXPECT_TRUE(c->tied_embeddings);
    EXPECT_FALSE(c->qkv_bias);
    EXPECT_TRUE(c->rope.freq_factors.empty());
    EXPECT_NE(c->describe().find("Smollm2 135M"), std::string::npos);
}

TEST_F(RealModel, TokenEmbeddingQ8_0MatchesReference) {
    const std::vector<float> r0 = row("token_embd.weight", 0);
    ASSERT_EQ(r0.size(), 576u);
    double sum = 0;
    for (float v : r0) {
        ASSERT_TRUE(std::isfinite(v));
        sum += v;
    }
    const float want[6] = {-0.10654449462890625f,  0.032978057861328125f, 0.048198699951171875f,
                           -0.022830963134765625f, -0.06849288940429688f, -0.04566192626953125f};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(r0[i], want[i]) << i;
    EXPECT_NEAR(sum, -2.2541093826293945, 1e-5);
    const std::vector<float> last = row("token_embd.weight", 49151);
    EXPECT_EQ(last[2], 0.0977935791015625f);
    EXPECT_EQ(last[3], -0.0977935791015625f);
}

TEST_F(RealModel, Q4_1MatchesReference) {
    const std::vector<float> q = row("blk.0.attn_q.weight", 0);
    const float want[6] = {-0.0963134765625f, 0.1573486328125f, -0.0963134765625f,
                           -0.73046875f,      1.1719970703125f, -0.0963134765625f};
    for (int i = 0; i < 6; ++i) EXPECT_EQ(q[i], want[i]) << i;
    double sum = 0;
    for (float v : row("blk.29.ffn_down.weight", 575)) sum += v;
    EXPECT_NEAR(sum, -5.229949951171875, 1e-4);
    const std::vector<float> norm = row("output_norm.weight", 0);
    EXPECT_EQ(norm[0], 1.7578125f);
    EXPECT_EQ(norm[4], 1.7421875f);
}

TEST_F(RealModel, EveryTensorDequantizesFinite) {
    // First and last row of every tensor: exercises every type and the bounds of every tensor.
    for (const GgufTensorInfo& t : file_->tensors()) {
        const int64_t rows = t.num_elements / t.dims[0];
        for (int64_t r : {int64_t{0}, rows - 1}) {
            for (float v : row(t.name, r)) ASSERT_TRUE(std::isfinite(v)) << t.name << " row " << r;
        }
    }
}

}  // namespace
}  // namespace lazyattn::loader
