// The loader reads GGUF tensor types as kernels::GgmlType (kernels/params/ggml_type.h): one enum,
// one numbering, shared with the kernels and backends.
#pragma once

#include "kernels/params/ggml_type.h"

namespace lazyattn::loader {

using kernels::ggml_row_size;
using kernels::ggml_type_name;
using kernels::ggml_type_traits;
using kernels::GgmlType;
using kernels::GgmlTypeTraits;

}  // namespace lazyattn::loader
