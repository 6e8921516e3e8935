// Dequantization of GGUF tensor data to fp32: one plain scalar function per type, written from
// the block layouts of the GGUF specification. These are the truth the quantized kernels are
// tested against.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "kernels/params/ggml_type.h"

namespace lazyattn::kernels::ref {

// Converts `n` consecutive elements starting at `src` (which must start on a block boundary;
// n a multiple of the block size) to fp32. Unsupported types give kUnsupported.
Status dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

}  // namespace lazyattn::kernels::ref
