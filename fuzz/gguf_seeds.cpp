// fuzz_gguf_seeds DIR: writes the seed corpus for fuzz_gguf_reader: two tiny synthetic models
// (llama Q4_0 tied, qwen2 Q8_0 untied) and small hand-made files that reach the parser's other
// branches (every metadata type, every dequantizable tensor type, custom alignment, RoPE scaling
// and frequency factors, GGUF v2). Valid files only: the fuzzer finds the invalid ones.
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "loader/gguf_writer.h"
#include "synthetic/synthetic_model.h"

namespace {

using namespace lazyattn::loader;

std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t n) {
    std::vector<uint8_t> b(n);
    for (auto& x : b) x = static_cast<uint8_t>(rng() & 0xff);
    // Keep fp16 fields finite: clear bit 6 of every odd byte (the top of a half's exponent).
    for (size_t i = 1; i < n; i += 2) b[i] &= 0xbf;
    return b;
}

void llama_keys(GgufWriter& w, int hidden, int heads) {
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.block_count", 1);
    w.add_u32("llama.context_length", 64);
    w.add_u32("llama.embedding_length", static_cast<uint32_t>(hidden));
    w.add_u32("llama.feed_forward_length", 32);
    w.add_u32("llama.attention.head_count", static_cast<uint32_t>(heads));
    w.add_u32("llama.attention.head_count_kv", 1);
    w.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    w.add_u32("llama.vocab_size", 4);
}

GgufWriter every_tensor_type() {
    std::mt19937 rng(7);
    GgufWriter w;
    llama_keys(w, 32, 2);
    const struct {
        const char* name;
        GgmlType type;
        int64_t n;
    } kTensors[] = {
        {"t.f32", GgmlType::kF32, 4},     {"t.f16", GgmlType::kF16, 4},     {"t.bf16", GgmlType::kBF16, 4},
        {"t.q4_0", GgmlType::kQ4_0, 32},  {"t.q4_1", GgmlType::kQ4_1, 32},  {"t.q5_0", GgmlType::kQ5_0, 32},
        {"t.q5_1", GgmlType::kQ5_1, 32},  {"t.q8_0", GgmlType::kQ8_0, 32},  {"t.q8_1", GgmlType::kQ8_1, 32},
        {"t.q2_k", GgmlType::kQ2_K, 256}, {"t.q3_k", GgmlType::kQ3_K, 256}, {"t.q4_k", GgmlType::kQ4_K, 256},
        {"t.q5_k", GgmlType::kQ5_K, 256}, {"t.q6_k", GgmlType::kQ6_K, 256}, {"t.q8_k", GgmlType::kQ8_K, 256},
        {"t.i8", GgmlType::kI8, 4},       {"t.i16", GgmlType::kI16, 4},     {"t.i32", GgmlType::kI32, 4},
        {"t.i64", GgmlType::kI64, 2},     {"t.f64", GgmlType::kF64, 2},
    };
    for (const auto& t : kTensors) {
        w.add_tensor(t.name, {t.n}, t.type, random_bytes(rng, ggml_row_size(t.type, t.n)));
    }
    w.add_tensor_f32("token_embd.weight", {32, 4}, std::vector<float>(128, 0.01f));
    return w;
}

GgufWriter every_metadata_type() {
    GgufWriter w;
    w.add_u8("a.u8", 1);
    w.add_i8("a.i8", -1);
    w.add_u16("a.u16", 2);
    w.add_i16("a.i16", -2);
    w.add_u32("a.u32", 3);
    w.add_i32("a.i32", -3);
    w.add_u64("a.u64", 4);
    w.add_i64("a.i64", -4);
    w.add_f32("a.f32", 0.5f);
    w.add_f64("a.f64", 0.25);
    w.add_bool("a.bool", true);
    w.add_string("a.str", "text");
    w.add_string_array("a.strs", {"x", "yz"});
    w.add_f32_array("a.f32s", {1.0f, 2.0f});
    w.add_i32_array("a.i32s", {1, -1});
    w.add_raw("a.bools", 9, {7, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0});
    w.add_raw("a.u16s", 9, {2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0});
    return w;
}

GgufWriter rope_variants() {
    GgufWriter w;
    llama_keys(w, 32, 2);
    w.add_u32("general.alignment", 64);
    w.add_f32("llama.rope.freq_base", 500000.0f);
    w.add_u32("llama.rope.dimension_count", 8);
    w.add_string("llama.rope.scaling.type", "linear");
    w.add_f32("llama.rope.scaling.factor", 2.0f);
    w.add_tensor_f32("rope_freqs.weight", {4}, {1.0f, 2.0f, 4.0f, 8.0f});
    w.add_tensor_f32("blk.0.attn_q.bias", {32}, std::vector<float>(32, 0.0f));
    w.add_tensor_f32("output.weight", {32, 4}, std::vector<float>(128, 0.0f));
    return w;
}

bool save(const std::string& path, std::vector<uint8_t> bytes, bool as_v2 = false) {
    if (as_v2) bytes[4] = 2;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) return false;
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    return std::fclose(f) == 0 && ok;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s SEED_DIR\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    lazyattn::synthetic::SyntheticModelOptions o;
    o.num_layers = 1;
    o.hidden = 32;
    o.num_heads = 2;
    o.num_kv_heads = 1;
    o.ffn = 32;
    o.context_length = 64;
    o.weight_type = GgmlType::kQ4_0;
    bool ok = lazyattn::synthetic::write_synthetic_model(dir + "/synthetic_llama_q4_0.gguf", o).ok();
    o.arch = "qwen2";
    o.weight_type = GgmlType::kQ8_0;
    o.tied_embeddings = false;
    ok = ok && lazyattn::synthetic::write_synthetic_model(dir + "/synthetic_qwen2_q8_0.gguf", o).ok();
    ok = ok && save(dir + "/every_tensor_type.gguf", every_tensor_type().to_bytes());
    ok = ok && save(dir + "/every_metadata_type.gguf", every_metadata_type().to_bytes());
    ok = ok && save(dir + "/every_metadata_type_v2.gguf", every_metadata_type().to_bytes(), true);
    ok = ok && save(dir + "/rope_variants.gguf", rope_variants().to_bytes());
    if (!ok) {
        std::fprintf(stderr, "cannot write seeds to %s\n", dir.c_str());
        return 1;
    }
    return 0;
}
