// Dequantization of GGUF tensor data to fp32 lives with the kernels it is the truth for
// (kernels/ref/dequantize_ref.h); the loader and its users call it from there.
#pragma once

#include "kernels/ref/dequantize_ref.h"
#include "loader/ggml_type.h"

namespace lazyattn::loader {

using kernels::ref::dequantize_row;

}  // namespace lazyattn::loader
