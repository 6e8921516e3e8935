// RoPE applied in place to fp32 rows of heads at given positions (kernels::RopeApplyParams, with
// device pointers): the reference is kernels::ref::rope_apply.
#pragma once

#include <cuda_runtime_api.h>

#include "core/status.h"
#include "kernels/params/rope_params.h"

namespace lazyattn::backend::cuda {

Status launch_rope_apply(const kernels::RopeApplyParams& p, cudaStream_t stream);

}  // namespace lazyattn::backend::cuda
