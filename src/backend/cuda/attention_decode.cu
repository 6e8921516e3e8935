// Decode attention launcher: chooses the split of the keys and dispatches on head_dim.
#include "backend/cuda/attention_decode.h"

#include <algorithm>
#include <cstdint>

namespace lazyattn::backend::cuda {

int decode_heads_per_cta(int group) { return group <= 1 ? 1 : (group <= 4 ? 4 : 8); }

int decode_num_splits(const CudaAttentionParams& p, int num_sms) {
    if (p.num_splits > 0) return p.num_splits;
    const int group = p.num_heads / p.num_kv_heads;
    const int per_cta = decode_heads_per_cta(group);
    const int64_t ctas = int64_t(p.num_seqs) * p.num_kv_heads * ((group + per_cta - 1) / per_cta);
    const int64_t target = 4 * int64_t(std::max(num_sms, 1));
    if (ctas <= 0 || ctas >= target) return 1;
    const int64_t by_parallelism = (target + ctas - 1) / ctas;
    const int64_t by_length = std::max<int64_t>(1, p.max_kv_tokens / 256);
    return int(std::clamp<int64_t>(std::min(by_parallelism, by_length), 1, 128));
}

size_t decode_workspace_floats(const CudaAttentionParams& p, int num_splits) {
    if (num_splits <= 1) return 0;
    return size_t(num_splits) * size_t(p.num_seqs) * size_t(p.num_heads) * size_t(p.head_dim + 1);
}

Status launch_attention_decode(const CudaAttentionParams& p, int num_splits, float* workspace, size_t workspace_floats,
                               cudaStream_t stream) {
    if (p.num_seqs == 0) return {};
    if (num_splits < 1 || num_splits > 65535) return invalid_argument("decode attention: bad number of splits");
    const size_t need = decode_workspace_floats(p, num_splits);
    if (need > workspace_floats || (need > 0 && workspace == nullptr)) {
        return invalid_argument("decode attention: workspace too small for the split");
    }
    float* o_part = workspace;
    float* lse_part = need > 0 ? workspace + size_t(num_splits) * p.num_seqs * p.num_heads * p.head_dim : nullptr;
    switch (p.head_dim) {
        case 64:
            return launch_attention_decode_dim<64>(p, num_splits, o_part, lse_part, stream);
        case 128:
            return launch_attention_decode_dim<128>(p, num_splits, o_part, lse_part, stream);
        default:
            return unsupported("decode attention: head_dim must be 64 or 128");
    }
}

}  // namespace lazyattn::backend::cuda
