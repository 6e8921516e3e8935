// Synthetic models: written to a scratch dir, reopened, config valid; deterministic bytes;
// weights of the requested type and scale; a real-format GPT-2 byte-level BPE vocabulary.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <set>

#include "loader/dequantize.h"
#include "loader/gguf_file.h"
#include "loader_test_util.h"
#include "model/model_config.h"
#include "synthetic/synthetic_model.h"
#include "synthetic/synthetic_vocab.h"

namespace lazyattn::synthetic {
namespace {

using namespace lazyattn::loader;

std::vector<uint8_t> read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<float> dequantized(const GgufFile& f, const std::string& name) {
    const GgufTensorInfo* t = f.find_tensor(name);
    EXPECT_NE(t, nullptr) << name;
    if (t == nullptr) return {};
    std::vector<float> v(static_cast<size_t>(t->num_elements));
    const Status st = dequantize_row(t->type, f.tensor_data(*t), v.data(), t->num_elements);
    EXPECT_TRUE(st.ok()) << st.to_string();
    return v;
}

void mean_std(const std::vector<float>& v, double* mean, double* sd) {
    double s = 0, s2 = 0;
    for (float x : v) {
        s += x;
        s2 += static_cast<double>(x) * x;
    }
    *mean = s / static_cast<double>(v.size());
    *sd = std::sqrt(std::max(0.0, s2 / static_cast<double>(v.size()) - *mean * *mean));
}

TEST(SyntheticModel, LlamaDefaultsLoad) {
    test::ScratchDir dir;
    const SyntheticModelOptions o;
    ASSERT_TRUE(write_synthetic_model(dir.file("m.gguf"), o).ok());
    auto f = GgufFile::open(dir.file("m.gguf"));
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    auto c = model::ModelConfig::from_gguf(**f);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_TRUE(c->validate().ok());
    EXPECT_EQ(c->arch, model::Architecture::kLlama);
    EXPECT_EQ(c->num_layers, 2);
    EXPECT_EQ(c->hidden_dim, 64);
    EXPECT_EQ(c->num_heads, 4);
    EXPECT_EQ(c->num_kv_heads, 2);
    EXPECT_EQ(c->head_dim, 16);
    EXPECT_EQ(c->ffn_dim, 128);
    EXPECT_EQ(c->context_length, 512);
    EXPECT_EQ(c->rope.freq_base, 10000.0f);
    EXPECT_EQ(c->rope.pairing, model::RopePairing::kInterleaved);
    EXPECT_TRUE(c->tied_embeddings);
    EXPECT_FALSE(c->qkv_bias);
    const auto tokens = (*f)->get_string_array("tokenizer.ggml.tokens").value();
    EXPECT_EQ(c->vocab_size, static_cast<int32_t>(tokens.size()));
    EXPECT_EQ((*f)->tensors().size(), 2u + 2u * 9u);
    const GgufTensorInfo* embd = (*f)->find_tensor("token_embd.weight");
    ASSERT_NE(embd, nullptr);
    EXPECT_EQ(embd->dims, (std::vector<int64_t>{64, c->vocab_size}));
    EXPECT_EQ((*f)->find_tensor("blk.1.attn_k.weight")->dims, (std::vector<int64_t>{64, 32}));
    EXPECT_EQ((*f)->find_tensor("blk.0.ffn_down.weight")->dims, (std::vector<int64_t>{128, 64}));
}

TEST(SyntheticModel, Qwen2QuantizedUntied) {
    test::ScratchDir dir;
    SyntheticModelOptions o;
    o.arch = "qwen2";
    o.num_layers = 3;
    o.hidden = 96;
    o.num_heads = 6;
    o.num_kv_heads = 3;
    o.ffn = 160;
    o.weight_type = GgmlType::kQ8_0;
    o.tied_embeddings = false;
    o.rope_freq_base = 1e6f;
    ASSERT_TRUE(write_synthetic_model(dir.file("q.gguf"), o).ok());
    auto f = GgufFile::open(dir.file("q.gguf"));
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    auto c = model::ModelConfig::from_gguf(**f);
    ASSERT_TRUE(c.ok()) << c.status().to_string();
    EXPECT_EQ(c->arch, model::Architecture::kQwen2);
    EXPECT_EQ(c->rope.pairing, model::RopePairing::kNeox);
    EXPECT_TRUE(c->qkv_bias);
    EXPECT_FALSE(c->tied_embeddings);
    EXPECT_EQ(c->rope.freq_base, 1e6f);
    EXPECT_EQ((*f)->tensors().size(), 3u + 3u * 12u);
    EXPECT_EQ((*f)->find_tensor("blk.2.attn_q.weight")->type, GgmlType::kQ8_0);
    EXPECT_EQ((*f)->find_tensor("blk.2.attn_q.bias")->type, GgmlType::kF32);
    EXPECT_EQ((*f)->find_tensor("blk.2.ffn_norm.weight")->type, GgmlType::kF32);
    EXPECT_EQ((*f)->get_int("general.file_type").value(), 7);
}

TEST(SyntheticModel, WeightStatistics) {
    test::ScratchDir dir;
    SyntheticModelOptions o;
    o.weight_type = GgmlType::kQ4_1;
    ASSERT_TRUE(write_synthetic_model(dir.file("w.gguf"), o).ok());
    auto f = GgufFile::open(dir.file("w.gguf"));
    ASSERT_TRUE(f.ok());
    double mean, sd;
    mean_std(dequantized(**f, "blk.0.attn_q.weight"), &mean, &sd);  // sigma 0.5 / sqrt(64)
    EXPECT_NEAR(mean, 0.0, 0.01);
    EXPECT_NEAR(sd, 0.0625, 0.01);
    mean_std(dequantized(**f, "blk.1.ffn_down.weight"), &mean, &sd);  // 0.5 / sqrt(128)
    EXPECT_NEAR(sd, 0.0442, 0.008);
    mean_std(dequantized(**f, "token_embd.weight"), &mean, &sd);
    EXPECT_NEAR(sd, 0.1, 0.01);
    for (float w : dequantized(**f, "blk.0.attn_norm.weight")) EXPECT_NEAR(w, 1.0f, 0.1f);
    for (float w : dequantized(**f, "output_norm.weight")) EXPECT_NEAR(w, 1.0f, 0.1f);
}

TEST(SyntheticModel, DeterministicPerSeed) {
    test::ScratchDir dir;
    SyntheticModelOptions o;
    ASSERT_TRUE(write_synthetic_model(dir.file("a.gguf"), o).ok());
    ASSERT_TRUE(write_synthetic_model(dir.file("b.gguf"), o).ok());
    o.seed = 99;
    ASSERT_TRUE(write_synthetic_model(dir.file("c.gguf"), o).ok());
    const auto a = read_all(dir.file("a.gguf")), b = read_all(dir.file("b.gguf")), c = read_all(dir.file("c.gguf"));
    EXPECT_GT(a.size(), 10000u);
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.size(), c.size());
    EXPECT_NE(a, c);
}

TEST(SyntheticModel, RejectsBadOptions) {
    test::ScratchDir dir;
    const auto bad = [&](const std::function<void(SyntheticModelOptions&)>& change) {
        SyntheticModelOptions o;
        change(o);
        return write_synthetic_model(dir.file("x.gguf"), o).code();
    };
    EXPECT_EQ(bad([](auto& o) { o.arch = "mistral"; }), StatusCode::kInvalidArgument);
    EXPECT_EQ(bad([](auto& o) { o.num_kv_heads = 3; }), StatusCode::kInvalidArgument);
    EXPECT_EQ(bad([](auto& o) { o.hidden = 60; }), StatusCode::kInvalidArgument);
    EXPECT_EQ(bad([](auto& o) {
                  o.weight_type = GgmlType::kQ8_0;
                  o.ffn = 100;
              }),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(bad([](auto& o) { o.weight_type = GgmlType::kQ4_K; }), StatusCode::kInvalidArgument);
    EXPECT_EQ(bad([](auto& o) { o.num_layers = 0; }), StatusCode::kInvalidArgument);
}

TEST(SyntheticVocab, Gpt2ByteAlphabet) {
    EXPECT_EQ(gpt2_byte_symbol(' '), "Ġ");
    EXPECT_EQ(gpt2_byte_symbol('\n'), "Ċ");
    EXPECT_EQ(gpt2_byte_symbol('\t'), "ĉ");
    EXPECT_EQ(gpt2_byte_symbol('A'), "A");
    EXPECT_EQ(gpt2_byte_symbol(0), "Ā");     // U+0100
    EXPECT_EQ(gpt2_byte_symbol(0x7f), "ġ");  // U+0121
    EXPECT_EQ(gpt2_byte_symbol(0xad), "Ń");  // U+0143, the last remapped byte
    EXPECT_EQ(gpt2_byte_symbol(0xe9), "é");  // printable Latin-1 maps to itself
    const std::vector<uint8_t> order = gpt2_byte_order();
    ASSERT_EQ(order.size(), 256u);
    EXPECT_EQ(order.front(), '!');
    EXPECT_EQ(order[93], '~');
    EXPECT_EQ(order[188], 0);  // first remapped byte follows the 188 printable ones
    std::set<std::string> symbols;
    for (int b = 0; b < 256; ++b) symbols.insert(gpt2_byte_symbol(static_cast<uint8_t>(b)));
    EXPECT_EQ(symbols.size(), 256u);
}

TEST(SyntheticVocab, RealFormatBpe) {
    const SyntheticVocab v = build_synthetic_vocab();
    EXPECT_EQ(v.merges.size(), 300u);  // the sample holds more than 300 pairs seen twice
    EXPECT_EQ(build_synthetic_vocab(40).merges.size(), 40u);
    ASSERT_EQ(v.tokens.size(), v.token_types.size());
    std::set<std::string> vocab(v.tokens.begin(), v.tokens.end());
    EXPECT_EQ(vocab.size(), v.tokens.size()) << "duplicate token spellings";
    for (const std::string& m : v.merges) {
        const size_t sp = m.find(' ');
        ASSERT_NE(sp, std::string::npos) << m;
        ASSERT_EQ(m.find(' ', sp + 1), std::string::npos) << m;
        const std::string left = m.substr(0, sp), right = m.substr(sp + 1);
        EXPECT_TRUE(vocab.count(left)) << m;
        EXPECT_TRUE(vocab.count(right)) << m;
        EXPECT_TRUE(vocab.count(left + right)) << m;
    }
    // Frequent English pieces were learned ("Ġthe": space + "the").
    EXPECT_TRUE(vocab.count("Ġthe"));
    EXPECT_EQ(v.tokens[v.endoftext_id], "<|endoftext|>");
    EXPECT_EQ(v.tokens[v.im_start_id], "<|im_start|>");
    EXPECT_EQ(v.tokens[v.im_end_id], "<|im_end|>");
    for (int32_t id : {v.endoftext_id, v.im_start_id, v.im_end_id}) EXPECT_EQ(v.token_types[id], 3);
    EXPECT_EQ(v.token_types[0], 1);
    EXPECT_EQ(v.im_end_id, static_cast<int32_t>(v.tokens.size()) - 1);
}

TEST(SyntheticVocab, TokenizerMetadataInModel) {
    test::ScratchDir dir;
    ASSERT_TRUE(write_synthetic_model(dir.file("t.gguf"), {}).ok());
    auto f = GgufFile::open(dir.file("t.gguf"));
    ASSERT_TRUE(f.ok());
    const GgufFile& g = **f;
    const SyntheticVocab v = build_synthetic_vocab();
    EXPECT_EQ(g.get_string("tokenizer.ggml.model").value(), "gpt2");
    EXPECT_EQ(g.get_string("tokenizer.ggml.pre").value(), "smollm");
    EXPECT_EQ(g.get_string_array("tokenizer.ggml.tokens").value(), v.tokens);
    EXPECT_EQ(g.get_string_array("tokenizer.ggml.merges").value(), v.merges);
    EXPECT_EQ(g.get_int_array("tokenizer.ggml.token_type").value().size(), v.tokens.size());
    EXPECT_EQ(g.get_int("tokenizer.ggml.bos_token_id").value(), v.im_start_id);
    EXPECT_EQ(g.get_int("tokenizer.ggml.eos_token_id").value(), v.im_end_id);
    EXPECT_FALSE(g.get_bool("tokenizer.ggml.add_bos_token").value());
    const std::string tmpl = g.get_string("tokenizer.chat_template").value();
    EXPECT_EQ(tmpl.rfind("{% for message in messages %}", 0), 0u);
    EXPECT_NE(tmpl.find("You are a helpful AI assistant named SmolLM, trained by Hugging Face"), std::string::npos);
    EXPECT_NE(tmpl.find("{{ '<|im_start|>assistant\n' }}"), std::string::npos);
}

}  // namespace
}  // namespace lazyattn::synthetic
