// Sampling: one CTA per row. Every cut (top-k, top-p, the draw) is the same question: "which
// candidate, in (logit desc, index asc) order, is the first at which a running sum of some weight
// reaches a target?" It is answered without sorting by a 4-pass radix select over an order-
// preserving 32-bit key of the logit (256-bucket histograms of weight and count in shared memory,
// the bucket found by a warp scan), then a scan over index order among exactly tied keys.
//
// Deterministic for given logits and draws: the weight histogram is summed with integer atomics
// on fixed-point weights (every weight is in [0, 1], so n of them fit in 62 bits at 2^(62 -
// bits(n)) per unit; 2^-45 resolution at a 128K vocabulary), since the order of float atomics,
// hence their rounded sum, changes from run to run. Every other sum is a fixed reduction tree.
#include "backend/cuda/sampling.h"

#include <climits>
#include <cmath>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_primitives.cuh"

namespace lazyattn::backend::cuda {
namespace {

constexpr int kSampleThreads = 512;
constexpr int kSampleWarps = kSampleThreads / 32;

// A position in candidate order: everything at or before (key, index).
struct Cut {
    uint32_t key;
    int32_t index;
};
constexpr Cut kEverything{0xffffffffu, INT_MAX};

struct SampleSmem {
    unsigned long long hist_w[256];  // fixed point, `unit` per 1.0
    int hist_c[256];
    float red_f[kSampleWarps];
    unsigned long long red_u[kSampleWarps];
    int red_i[kSampleWarps];
    int bucket;
    float remaining;
    float unit;      // fixed-point scale of hist_w
    float inv_unit;  // 1 / unit
};

// The fixed-point unit for sums of n weights in [0, 1]: 2^(62 - bits(n)), a power of two.
__device__ __forceinline__ float histogram_unit(int n) {
    int bits = 0;
    while (bits < 31 && (1 << bits) <= n) ++bits;
    return ldexpf(1.0f, 62 - bits);
}

__device__ __forceinline__ float sanitize(float x) { return x != x ? -INFINITY : (x == 0.0f ? 0.0f : x); }

// Ascending key = descending logit (NaN as -inf, -0 as +0).
__device__ __forceinline__ uint32_t order_key(float x) {
    const uint32_t u = __float_as_uint(sanitize(x));
    const uint32_t ascending = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ~ascending;
}

__device__ __forceinline__ bool at_or_before(uint32_t key, int index, const Cut& c) {
    return key < c.key || (key == c.key && index <= c.index);
}

__device__ __forceinline__ float block_sum(float x, SampleSmem& sm) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    x = warp_sum(x);
    if (lane == 0) sm.red_f[warp] = x;
    __syncthreads();
    float r = lane < kSampleWarps ? sm.red_f[lane] : 0.0f;
    r = warp_sum(r);
    __syncthreads();
    return r;
}

template <bool kMax>
__device__ __forceinline__ int block_extreme(int x, SampleSmem& sm) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o >>= 1) {
        const int y = __shfl_xor_sync(kFullMask, x, o);
        x = kMax ? max(x, y) : min(x, y);
    }
    if (lane == 0) sm.red_i[warp] = x;
    __syncthreads();
    int r = lane < kSampleWarps ? sm.red_i[lane] : (kMax ? INT_MIN : INT_MAX);
    for (int o = 16; o > 0; o >>= 1) {
        const int y = __shfl_xor_sync(kFullMask, r, o);
        r = kMax ? max(r, y) : min(r, y);
    }
    __syncthreads();
    return r;
}

__device__ __forceinline__ unsigned long long block_min_u64(unsigned long long x, SampleSmem& sm) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long y = __shfl_xor_sync(kFullMask, x, o);
        x = y < x ? y : x;
    }
    if (lane == 0) sm.red_u[warp] = x;
    __syncthreads();
    unsigned long long r = lane < kSampleWarps ? sm.red_u[lane] : ~0ull;
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long y = __shfl_xor_sync(kFullMask, r, o);
        r = y < r ? y : r;
    }
    __syncthreads();
    return r;
}

// Inclusive prefix sum within the warp.
__device__ __forceinline__ float warp_inclusive_scan(float x) {
    const int lane = threadIdx.x % 32;
    for (int o = 1; o < 32; o <<= 1) {
        const float y = __shfl_sync(kFullMask, x, lane >= o ? lane - o : 0);
        if (lane >= o) x += y;
    }
    return x;
}

// Inclusive prefix sum over the CTA in thread order; *total receives the CTA's sum.
__device__ __forceinline__ float block_inclusive_scan(float x, float* total, SampleSmem& sm) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    x = warp_inclusive_scan(x);
    if (lane == 31) sm.red_f[warp] = x;
    __syncthreads();
    const float warp_scan = warp_inclusive_scan(lane < kSampleWarps ? sm.red_f[lane] : 0.0f);
    const float before = __shfl_sync(kFullMask, warp_scan, warp > 0 ? warp - 1 : 0);
    *total = __shfl_sync(kFullMask, warp_scan, kSampleWarps - 1);
    __syncthreads();
    return x + (warp > 0 ? before : 0.0f);
}

// The first candidate in order (the greedy choice).
__device__ Cut first_candidate(const float* x, int n, SampleSmem& sm) {
    unsigned long long best = ~0ull;
    for (int i = threadIdx.x; i < n; i += kSampleThreads) {
        const unsigned long long v = (static_cast<unsigned long long>(order_key(x[i])) << 32) | uint32_t(i);
        best = v < best ? v : best;
    }
    best = block_min_u64(best, sm);
    return Cut{uint32_t(best >> 32), int32_t(best & 0xffffffffu)};
}

// Warp 0 picks the radix bucket holding the target; writes sm.bucket (-1: nothing eligible) and
// the target left inside that bucket (INFINITY: its last candidate, when rounding left the total
// short of the target).
__device__ void pick_bucket(float remaining, SampleSmem& sm) {
    const int lane = threadIdx.x % 32;
    float w8[8];
    int c8[8];
    float lane_w = 0.0f;
    int lane_c = 0;
    for (int e = 0; e < 8; ++e) {
        w8[e] = float(sm.hist_w[lane * 8 + e]) * sm.inv_unit;
        c8[e] = sm.hist_c[lane * 8 + e];
        lane_w += w8[e];
        lane_c += c8[e];
    }
    const float incl = warp_inclusive_scan(lane_w);
    const float prev = __shfl_sync(kFullMask, incl, lane > 0 ? lane - 1 : 0);
    const float excl = lane > 0 ? prev : 0.0f;
    int first_lane = lane_c > 0 && incl >= remaining ? lane : 32;
    int last_lane = lane_c > 0 ? lane : -1;
    for (int o = 16; o > 0; o >>= 1) {
        first_lane = min(first_lane, __shfl_xor_sync(kFullMask, first_lane, o));
        last_lane = max(last_lane, __shfl_xor_sync(kFullMask, last_lane, o));
    }
    if (first_lane < 32) {
        if (lane == first_lane) {
            float cum = excl;
            int last_e = -1;
            float last_cum = cum;
            for (int e = 0; e < 8; ++e) {
                if (c8[e] == 0) continue;
                if (cum + w8[e] >= remaining) {
                    sm.bucket = lane * 8 + e;
                    sm.remaining = remaining - cum;
                    return;
                }
                last_e = e;
                last_cum = cum;
                cum += w8[e];
            }
            sm.bucket = lane * 8 + last_e;  // the lane's own sum reached the target, its parts did not
            sm.remaining = remaining - last_cum;
        }
    } else if (last_lane >= 0) {
        if (lane == last_lane) {
            int e = 7;
            while (c8[e] == 0) --e;
            sm.bucket = lane * 8 + e;
            sm.remaining = INFINITY;
        }
    } else if (lane == 0) {
        sm.bucket = -1;
        sm.remaining = INFINITY;
    }
}

// The first candidate at or before `limit` at which the running sum of weight(logit), in candidate
// order, reaches `target` (the last eligible candidate if rounding keeps the sum short).
template <typename Weight>
__device__ Cut block_select(const float* x, int n, const Cut& limit, float target, Weight weight, SampleSmem& sm) {
    const int tid = threadIdx.x;
    uint32_t prefix = 0, mask = 0;
    float remaining = target;
    const float unit = histogram_unit(n);
    if (tid == 0) {
        sm.unit = unit;
        sm.inv_unit = 1.0f / unit;
    }
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (int b = tid; b < 256; b += kSampleThreads) {
            sm.hist_w[b] = 0;
            sm.hist_c[b] = 0;
        }
        __syncthreads();
        for (int i = tid; i < n; i += kSampleThreads) {
            const float v = x[i];
            const uint32_t k = order_key(v);
            if ((k & mask) != prefix || !at_or_before(k, i, limit)) continue;
            const int b = int((k >> shift) & 255u);
            const float w = fminf(fmaxf(weight(v), 0.0f), 1.0f);
            atomicAdd(&sm.hist_w[b], static_cast<unsigned long long>(w * unit));
            atomicAdd(&sm.hist_c[b], 1);
        }
        __syncthreads();
        if (tid < 32) pick_bucket(remaining, sm);
        __syncthreads();
        const int b = sm.bucket;
        remaining = sm.remaining;
        __syncthreads();
        if (b < 0) return limit;
        prefix |= uint32_t(b) << shift;
        mask |= 255u << shift;
    }
    // Exact key found; resolve ties in index order.
    int count = 0, lo = INT_MAX, hi = -1;
    for (int i = tid; i < n; i += kSampleThreads) {
        if (order_key(x[i]) == prefix && at_or_before(prefix, i, limit)) {
            ++count;
            lo = min(lo, i);
            hi = max(hi, i);
        }
    }
    lo = block_extreme<false>(lo, sm);
    hi = block_extreme<true>(hi, sm);
    count = int(block_sum(float(count), sm));
    if (count <= 1) return Cut{prefix, lo};
    float carry = 0.0f;
    for (int base = lo; base <= hi; base += kSampleThreads) {
        const int i = base + tid;
        const bool tie = i <= hi && order_key(x[i]) == prefix && at_or_before(prefix, i, limit);
        const float w = tie ? weight(x[i]) : 0.0f;
        float total;
        const float incl = block_inclusive_scan(w, &total, sm);
        const int hit = block_extreme<false>(tie && carry + incl >= remaining ? i : INT_MAX, sm);
        if (hit != INT_MAX) return Cut{prefix, hit};
        carry += total;
    }
    return Cut{prefix, hi};
}

template <typename Weight>
__device__ float sum_before(const float* x, int n, const Cut& limit, Weight weight, SampleSmem& sm) {
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += kSampleThreads) {
        if (at_or_before(order_key(x[i]), i, limit)) s += weight(x[i]);
    }
    return block_sum(s, sm);
}

}  // namespace

template <int kUnused = 0>
__global__ void __launch_bounds__(kSampleThreads) sample_kernel(const SampleParams p) {
    LA_SHARED SampleSmem sm;
    const int row = blockIdx.x;
    const float* x = p.logits + int64_t(row) * p.row_stride;
    const int n = p.vocab_size;
    const Cut first = first_candidate(x, n, sm);
    const float temperature = p.temperature != nullptr ? p.temperature[row] : 0.0f;
    const float mx = sanitize(x[first.index]);
    if (!(temperature > 0.0f) || mx == -INFINITY) {
        if (threadIdx.x == 0) p.tokens[row] = first.index;
        return;
    }
    Cut keep = kEverything;
    const int top_k = p.top_k != nullptr ? p.top_k[row] : 0;
    if (top_k > 0 && top_k < n)
        keep = block_select(
            x, n, keep, float(top_k), [](float) { return 1.0f; }, sm);
    const float top_p = p.top_p != nullptr ? p.top_p[row] : 1.0f;
    if (top_p < 1.0f) {
        auto prob = [mx](float v) { return expf(sanitize(v) - mx); };
        const float total = sum_before(x, n, keep, prob, sm);
        keep = block_select(x, n, keep, top_p * total, prob, sm);
    }
    const float inv_t = 1.0f / temperature;
    auto weight = [mx, inv_t](float v) { return expf((sanitize(v) - mx) * inv_t); };
    const float total = sum_before(x, n, keep, weight, sm);
    const Cut pick = block_select(x, n, keep, p.uniform[row] * total, weight, sm);
    if (threadIdx.x == 0) p.tokens[row] = pick.index;
}

Status launch_sample(const SampleParams& p, cudaStream_t stream) {
    if (p.num_rows == 0) return {};
    if (p.vocab_size <= 0) return invalid_argument("sample: vocab_size must be positive");
    auto* kernel = &sample_kernel<0>;
    LA_LAUNCH_KERNEL(kernel, dim3(unsigned(p.num_rows)), dim3(kSampleThreads), 0, stream, p);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("sample_kernel");
    return {};
}

// One thread per token; a warp shares its mask word (32 consecutive tokens are one word when
// the row starts at a multiple of 32, which token 0 of every row is).
__global__ void __launch_bounds__(256) apply_token_bitmask_kernel(float* logits, int64_t row_stride, int32_t vocab_size,
                                                                  const int32_t* bitmask, int32_t bitmask_words) {
    const int32_t row = int32_t(blockIdx.y);
    const int32_t i = int32_t(blockIdx.x) * 256 + int32_t(threadIdx.x);
    if (i >= vocab_size) return;
    const int32_t w = i / 32;
    const bool allowed =
        w < bitmask_words && ((uint32_t(bitmask[int64_t(row) * bitmask_words + w]) >> (i % 32)) & 1u) != 0;
    if (!allowed) logits[int64_t(row) * row_stride + i] = -INFINITY;
}

Status launch_apply_token_bitmask(float* logits, int64_t row_stride, int32_t num_rows, int32_t vocab_size,
                                  const int32_t* bitmask, int32_t bitmask_words, cudaStream_t stream) {
    if (num_rows == 0) return {};
    if (vocab_size <= 0 || bitmask_words < 0) return invalid_argument("apply_token_bitmask: bad shape");
    if (num_rows > 65535) return invalid_argument("apply_token_bitmask: more than 65535 rows in one launch");
    const dim3 grid(unsigned((vocab_size + 255) / 256), unsigned(num_rows));
    auto* kernel = &apply_token_bitmask_kernel;
    LA_LAUNCH_KERNEL(kernel, grid, dim3(256), 0, stream, logits, row_stride, vocab_size, bitmask, bitmask_words);
    LA_CUDA_RETURN_IF_LAUNCH_FAILED("apply_token_bitmask_kernel");
    return {};
}

Status launch_argmax(const float* logits, int64_t row_stride, int32_t num_rows, int32_t vocab_size, int32_t* tokens,
                     cudaStream_t stream) {
    SampleParams p{};
    p.logits = logits;
    p.row_stride = row_stride;
    p.num_rows = num_rows;
    p.vocab_size = vocab_size;
    p.tokens = tokens;
    return launch_sample(p, stream);
}

}  // namespace lazyattn::backend::cuda
