// The op tests' cases, one list run against every backend: the CPU backend's tests
// (tests/kernels) and the CUDA backend's, on a GPU and in its CPU emulator (tests/cuda), each
// against the scalar reference (kernels::ref). A case a backend has no kernel for is skipped
// there, naming why (backend_lacks), never dropped from the list, so a shape added here is a
// shape every backend is checked on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lazyattn::testing::op_cases {

// --- Paged attention.
struct AttentionShape {
    int32_t num_heads, num_kv_heads, head_dim;
    bool keys_rotated;  // lazy (keys stored rotated) or lazy-k (raw keys, rotated when read)
};

inline const std::vector<AttentionShape>& attention_shapes() {
    // Each GQA ratio the kernels group heads by, with the fewest heads that show it (the CPU
    // tests run every shape three times: default, scalar and AVX2 kernels).
    static const std::vector<AttentionShape> shapes = {
        {4, 4, 64, true},    // MHA
        {4, 4, 128, false},  // MHA, raw keys
        {4, 2, 64, true},    // GQA 2
        {12, 4, 128, true},  // GQA 3: CUDA pads the heads to a CTA of 4
        {9, 3, 64, false},   // GQA 3, raw keys
        {32, 8, 128, true},  // GQA 4 (Llama 3 8B)
        {8, 2, 64, false},   // GQA 4, raw keys
        {16, 2, 64, true},   // GQA 8
        {8, 1, 128, false},  // GQA 8, one KV head, raw keys
        {16, 1, 64, false},  // GQA 16: two CUDA CTAs of 8 per KV head
        {4, 2, 96, true},    // head dims without a specialization (the CPU's)
        {2, 1, 256, false},
    };
    return shapes;
}

inline std::string name(const AttentionShape& s) {
    return "h" + std::to_string(s.num_heads) + "_kv" + std::to_string(s.num_kv_heads) + "_d" +
           std::to_string(s.head_dim) + (s.keys_rotated ? "_lazy" : "_lazyk");
}

// --- RMSNorm: rows of `dim` values.
struct NormShape {
    int64_t rows, dim;
};

inline const std::vector<NormShape>& norm_shapes() {
    static const std::vector<NormShape> shapes = {{1, 15},   {17, 99},  {1, 4096}, {17, 4096},
                                                  {15, 576}, {16, 576}, {99, 576}};
    return shapes;
}

// --- SwiGLU and GeGLU: n gate and up values (odd sizes, one past a multiple of the SIMD width).
inline const std::vector<int64_t>& glu_sizes() {
    static const std::vector<int64_t> sizes = {1, 15, 1000, 1543, 26119, 100003};
    return sizes;
}

// --- RoPE applied to `rows` rows of num_heads heads.
struct RopeShape {
    int32_t head_dim, num_heads;
    bool neox;
    int32_t rotary_divisor;  // rotary dims = head_dim / rotary_divisor
    bool table;              // a cos/sin table for the first positions (rows past it computed directly)
};

inline const std::vector<RopeShape>& rope_shapes() {
    static const std::vector<RopeShape> shapes = {{64, 1, false, 1, false}, {128, 8, true, 1, true},
                                                  {128, 8, false, 2, true}, {64, 3, true, 2, false},
                                                  {64, 3, false, 1, true},  {64, 3, true, 1, true}};
    return shapes;
}

inline const std::vector<int32_t>& rope_rows() {
    static const std::vector<int32_t> rows = {1, 15, 16, 17, 99};
    return rows;
}

// --- Structured output's token mask (kernels::ref::apply_token_bitmask): a vocabulary against
// the mask's width in 32-bit words. Vocabularies at, one below and one past a word boundary,
// SmolLM2's and Llama 3's; masks as wide as the vocabulary needs, one word short (tokens past the
// mask are refused) and padded (XGrammar rounds up to whole words).
struct TokenMaskShape {
    int32_t vocab_size, bitmask_words;
};

inline const std::vector<TokenMaskShape>& token_mask_shapes() {
    static const std::vector<TokenMaskShape> shapes = {
        {1, 1}, {31, 1}, {32, 1}, {33, 2}, {33, 1}, {1000, 32}, {1000, 40}, {49152, 1536}, {128256, 4008},
    };
    return shapes;
}

inline std::string name(const TokenMaskShape& s) {
    return "v" + std::to_string(s.vocab_size) + "_w" + std::to_string(s.bitmask_words);
}

}  // namespace lazyattn::testing::op_cases
