// The tensor element types of GGUF files (numbering as in the GGUF specification, so a file's
// type field casts to it), with their block geometry: the one enum of weight types the loader,
// the kernels and every backend use. Quantized types store `block_size` elements in `type_size`
// bytes. The types with a direct matmul kernel: kernels::is_weight_type (matmul_params.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace lazyattn::kernels {

enum class GgmlType : uint32_t {
    kF32 = 0,
    kF16 = 1,
    kQ4_0 = 2,
    kQ4_1 = 3,
    kQ5_0 = 6,
    kQ5_1 = 7,
    kQ8_0 = 8,
    kQ8_1 = 9,
    kQ2_K = 10,
    kQ3_K = 11,
    kQ4_K = 12,
    kQ5_K = 13,
    kQ6_K = 14,
    kQ8_K = 15,
    kI8 = 24,
    kI16 = 25,
    kI32 = 26,
    kI64 = 27,
    kF64 = 28,
    kBF16 = 30,
};

struct GgmlTypeTraits {
    const char* name;     // "Q4_1"
    int64_t block_size;   // elements per block (1 for plain types), 0 if unknown
    size_t type_size;     // bytes per block
    bool can_dequantize;  // lazyattn can turn it into fp32
};

// Traits of a type; block_size == 0 for a number lazyattn does not know.
GgmlTypeTraits ggml_type_traits(uint32_t type);
inline GgmlTypeTraits ggml_type_traits(GgmlType type) { return ggml_type_traits(static_cast<uint32_t>(type)); }
const char* ggml_type_name(GgmlType type);

// Bytes taken by a row of `n` elements; n must be a multiple of the block size.
size_t ggml_row_size(GgmlType type, int64_t n);

}  // namespace lazyattn::kernels
