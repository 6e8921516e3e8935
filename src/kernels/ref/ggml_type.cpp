// The block geometry table for every ggml type number lazyattn knows. Types lazyattn cannot
// dequantize (the IQ and ternary families) still get their geometry, so a file holding them
// parses and the error appears only when such a tensor is actually used.
#include "kernels/params/ggml_type.h"

#include "core/check.h"

namespace lazyattn::kernels {

namespace {

constexpr int64_t kQK = 32;     // elements per block of the legacy quants
constexpr int64_t kQK_K = 256;  // elements per super-block of the K and IQ quants

struct TypeEntry {
    uint32_t id;
    GgmlTypeTraits traits;
};

// Sizes are those of the ggml block structs (ggml-common.h), checked against gguf-py's table.
constexpr TypeEntry kTypes[] = {
    {0, {"F32", 1, 4, true}},
    {1, {"F16", 1, 2, true}},
    {2, {"Q4_0", kQK, 18, true}},
    {3, {"Q4_1", kQK, 20, true}},
    {6, {"Q5_0", kQK, 22, true}},
    {7, {"Q5_1", kQK, 24, true}},
    {8, {"Q8_0", kQK, 34, true}},
    {9, {"Q8_1", kQK, 36, true}},
    {10, {"Q2_K", kQK_K, 84, true}},
    {11, {"Q3_K", kQK_K, 110, true}},
    {12, {"Q4_K", kQK_K, 144, true}},
    {13, {"Q5_K", kQK_K, 176, true}},
    {14, {"Q6_K", kQK_K, 210, true}},
    {15, {"Q8_K", kQK_K, 292, true}},
    {16, {"IQ2_XXS", kQK_K, 66, false}},
    {17, {"IQ2_XS", kQK_K, 74, false}},
    {18, {"IQ3_XXS", kQK_K, 98, false}},
    {19, {"IQ1_S", kQK_K, 50, false}},
    {20, {"IQ4_NL", kQK, 18, false}},
    {21, {"IQ3_S", kQK_K, 110, false}},
    {22, {"IQ2_S", kQK_K, 82, false}},
    {23, {"IQ4_XS", kQK_K, 136, false}},
    {24, {"I8", 1, 1, true}},
    {25, {"I16", 1, 2, true}},
    {26, {"I32", 1, 4, true}},
    {27, {"I64", 1, 8, true}},
    {28, {"F64", 1, 8, true}},
    {29, {"IQ1_M", kQK_K, 56, false}},
    {30, {"BF16", 1, 2, true}},
    {34, {"TQ1_0", kQK_K, 54, false}},
    {35, {"TQ2_0", kQK_K, 66, false}},
    {39, {"MXFP4", kQK, 17, false}},
    {40, {"NVFP4", 64, 36, false}},
    {41, {"Q1_0", 128, 18, false}},
};

}  // namespace

GgmlTypeTraits ggml_type_traits(uint32_t type) {
    for (const TypeEntry& e : kTypes) {
        if (e.id == type) return e.traits;
    }
    return {"unknown", 0, 0, false};
}

const char* ggml_type_name(GgmlType type) { return ggml_type_traits(type).name; }

size_t ggml_row_size(GgmlType type, int64_t n) {
    const GgmlTypeTraits t = ggml_type_traits(type);
    LA_CHECK_MSG(t.block_size > 0, "ggml_row_size of unknown type %u", static_cast<unsigned>(type));
    LA_CHECK_MSG(n >= 0 && n % t.block_size == 0, "ggml_row_size: %lld elements of %s", static_cast<long long>(n),
                 t.name);
    return static_cast<size_t>(n / t.block_size) * t.type_size;
}

}  // namespace lazyattn::kernels
