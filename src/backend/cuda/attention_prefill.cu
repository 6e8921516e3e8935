// Prefill attention launcher: dispatches on head_dim.
#include "backend/cuda/attention_prefill.h"

namespace lazyattn::backend::cuda {

Status launch_attention_prefill(const CudaAttentionParams& p, cudaStream_t stream) {
    if (p.num_seqs == 0 || p.max_queries_per_seq <= 0) return {};
    switch (p.head_dim) {
        case 64:
            return launch_attention_prefill_dim<64>(p, stream);
        case 128:
            return launch_attention_prefill_dim<128>(p, stream);
        default:
            return unsupported("prefill attention: head_dim must be 64 or 128");
    }
}

}  // namespace lazyattn::backend::cuda
