// bench_cuda_attention: the CUDA paged attention kernels on Llama-3.1-8B (32 query heads, 8 KV
// heads, head_dim 128) and Llama-3.2-1B (32 / 8 / 64) shapes, block size 16.
//
// Decode: lazy (segments rotated at their own positions, per-span query rotation) against the
// same kernel with every delta 0 (ordinary paged attention) and lazy-k (keys rotated as read),
// batch 1..256, contexts 1k..16k made of 128- or 1024-token documents plus a 64-token tail. Each
// sequence owns its blocks, shuffled over the whole cache. Reported: time per call, achieved
// bandwidth (bytes of K and V read), and its ratio to the measured device-to-device copy
// bandwidth (cudaMemcpy, bytes read + written).
// Prefill: one sequence of L query rows (L = 1k..8k) causal over L keys split into 1024-token
// documents (lazy: stored from 0, so every document has its own delta), in the three modes;
// TFLOP/s counts 4 * head_dim * heads * L(L+1)/2.
//
// Timing: CUDA graphs of 10 calls replayed until >= 25 ms, CUDA events (plain launches if graph
// capture is refused). --json FILE writes one
// JSON object per measurement; --quick runs a small grid.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/attention_decode.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"

using lazyattn::Status;
using lazyattn::backend::cuda::CudaAttentionParams;
using lazyattn::backend::cuda::CudaBackend;
using lazyattn::kernels::AttentionSeq;
using lazyattn::kernels::AttentionSpan;

namespace {

#define BENCH_CHECK(call)                                                                               \
    do {                                                                                                \
        const cudaError_t e_ = (call);                                                                  \
        if (e_ != cudaSuccess) {                                                                        \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            std::exit(1);                                                                               \
        }                                                                                               \
    } while (0)

#define BENCH_OK(expr)                                                                       \
    do {                                                                                     \
        const Status s_ = (expr);                                                            \
        if (!s_.ok()) {                                                                      \
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, s_.to_string().c_str()); \
            std::exit(1);                                                                    \
        }                                                                                    \
    } while (0)

__global__ void fill_random_bf16(__nv_bfloat16* p, size_t n, uint64_t seed) {
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ull ^ seed;
        h ^= h >> 31;
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
        p[i] = __float2bfloat16(float(int64_t(h >> 40) - (1ll << 23)) / float(1 << 23));
    }
}

__global__ void fill_random_f32(float* p, size_t n, uint64_t seed) {
    for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        uint64_t h = (i + 7) * 0xD1B54A32D192ED03ull ^ seed;
        h ^= h >> 29;
        h *= 0x94D049BB133111EBull;
        h ^= h >> 32;
        p[i] = 2.0f * float(int64_t(h >> 40) - (1ll << 23)) / float(1 << 23);
    }
}

template <typename T>
T* device_alloc(size_t n) {
    void* p = nullptr;
    BENCH_CHECK(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)));
    return static_cast<T*>(p);
}

template <typename T>
T* device_copy(const std::vector<T>& v) {
    T* p = device_alloc<T>(v.size());
    BENCH_CHECK(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    BENCH_CHECK(cudaDeviceSynchronize());  // a pageable upload may return before it lands
    return p;
}

struct Model {
    const char* name;
    int heads, kv_heads, head_dim;
};

enum class Mode { kLazy, kDelta0, kLazyK };
const char* mode_name(Mode m) { return m == Mode::kLazy ? "lazy" : (m == Mode::kDelta0 ? "delta0" : "lazy-k"); }

// Whether timings use CUDA graphs (else plain launches, if capture was refused once).
bool g_use_graphs = true;

// Records kPerGraph calls of `op` into an executable graph; false if capture is refused.
bool capture(cudaStream_t stream, const std::function<Status()>& op, int calls, cudaGraphExec_t* exec) {
    if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) return false;
    bool ok = true;
    for (int i = 0; i < calls; ++i) ok = ok && op().ok();
    cudaGraph_t graph = nullptr;
    ok = cudaStreamEndCapture(stream, &graph) == cudaSuccess && ok && graph != nullptr;
    ok = ok && cudaGraphInstantiate(exec, graph, 0) == cudaSuccess;
    if (graph) cudaGraphDestroy(graph);
    return ok;
}

// Mean seconds per call of `op`: CUDA graphs of 10 calls (or batches of 10 plain calls) replayed
// until >= 25 ms, timed with events.
double time_op(cudaStream_t stream, const std::function<Status()>& op) {
    BENCH_OK(op());  // first call: kernel attributes, workspace
    BENCH_CHECK(cudaStreamSynchronize(stream));
    constexpr int kPerBatch = 10;
    cudaGraphExec_t exec = nullptr;
    if (g_use_graphs && !capture(stream, op, kPerBatch, &exec)) {
        cudaGetLastError();
        std::fprintf(stderr, "bench_cuda_attention: CUDA graph capture refused; timing plain launches\n");
        g_use_graphs = false;
        exec = nullptr;
    }
    auto batch = [&] {
        if (exec) {
            BENCH_CHECK(cudaGraphLaunch(exec, stream));
        } else {
            for (int i = 0; i < kPerBatch; ++i) BENCH_OK(op());
        }
    };
    cudaEvent_t start, stop;
    BENCH_CHECK(cudaEventCreate(&start));
    BENCH_CHECK(cudaEventCreate(&stop));
    batch();  // warm-up
    BENCH_CHECK(cudaEventRecord(start, stream));
    batch();
    BENCH_CHECK(cudaEventRecord(stop, stream));
    BENCH_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    BENCH_CHECK(cudaEventElapsedTime(&ms, start, stop));
    const int reps = std::clamp(int(25.0f / std::max(ms, 1e-3f)), 2, 200);
    BENCH_CHECK(cudaEventRecord(start, stream));
    for (int r = 0; r < reps; ++r) batch();
    BENCH_CHECK(cudaEventRecord(stop, stream));
    BENCH_CHECK(cudaEventSynchronize(stop));
    BENCH_CHECK(cudaEventElapsedTime(&ms, start, stop));
    BENCH_CHECK(cudaEventDestroy(start));
    BENCH_CHECK(cudaEventDestroy(stop));
    if (exec) BENCH_CHECK(cudaGraphExecDestroy(exec));
    return double(ms) * 1e-3 / (double(reps) * kPerBatch);
}

// Device-to-device copy bandwidth, bytes read + written per second.
double copy_bandwidth(cudaStream_t stream) {
    const size_t bytes = size_t(2) << 30;
    char* a = device_alloc<char>(bytes);
    char* b = device_alloc<char>(bytes);
    BENCH_CHECK(cudaMemset(a, 1, bytes));
    BENCH_CHECK(cudaDeviceSynchronize());
    const double t = time_op(stream, [&] {
        return lazyattn::backend::cuda::cuda_status(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream),
                                                    "cudaMemcpyAsync");
    });
    BENCH_CHECK(cudaFree(a));
    BENCH_CHECK(cudaFree(b));
    return 2.0 * double(bytes) / t;
}

// One sequence's spans: documents of doc_len stored from 0, then a tail at its logical positions.
void add_sequence(int ctx, int doc_len, int tail, int block_size, Mode mode, std::vector<int32_t>& next_blocks,
                  size_t& next_free, std::vector<int32_t>& block_ids, std::vector<AttentionSpan>& spans) {
    int logical = 0;
    auto add_span = [&](int len, bool is_tail) {
        const int stored_base = (is_tail || mode == Mode::kDelta0) ? logical : 0;
        spans.push_back({int32_t(block_ids.size()), len, logical, stored_base});
        for (int t = 0; t < len; t += block_size) block_ids.push_back(next_blocks[next_free++]);
        logical += len;
    };
    for (int left = ctx - tail; left > 0; left -= doc_len) add_span(std::min(doc_len, left), false);
    add_span(tail, true);
}

struct Cache {
    __nv_bfloat16* k = nullptr;
    __nv_bfloat16* v = nullptr;
    size_t num_blocks = 0;
};

std::FILE* g_json = nullptr;

void print_json(const std::string& line) {
    if (g_json) std::fprintf(g_json, "%s\n", line.c_str());
}

// Returns whether the output of the last call is finite everywhere.
bool output_finite(const float* out, size_t n) {
    std::vector<float> h(n);
    BENCH_CHECK(cudaMemcpy(h.data(), out, n * sizeof(float), cudaMemcpyDeviceToHost));
    return std::all_of(h.begin(), h.end(), [](float x) { return std::isfinite(x); });
}

struct RopeTables {
    float* inv_freq;
    float* table;
    int positions;
};

RopeTables make_rope(int head_dim, int positions) {
    std::vector<float> f(head_dim / 2), t(size_t(positions) * head_dim);
    for (int i = 0; i < head_dim / 2; ++i) f[i] = float(std::pow(500000.0, -2.0 * i / head_dim));
    for (int p = 0; p < positions; ++p) {
        for (int i = 0; i < head_dim / 2; ++i) {
            t[(size_t(p) * (head_dim / 2) + i) * 2] = float(std::cos(double(p) * f[i]));
            t[(size_t(p) * (head_dim / 2) + i) * 2 + 1] = float(std::sin(double(p) * f[i]));
        }
    }
    return {device_copy(f), device_copy(t), positions};
}

CudaAttentionParams base_params(const Model& m, const Cache& c, const RopeTables& rope, Mode mode) {
    CudaAttentionParams p{};
    p.k_cache = c.k;
    p.v_cache = c.v;
    p.num_heads = m.heads;
    p.num_kv_heads = m.kv_heads;
    p.head_dim = m.head_dim;
    p.block_size = 16;
    p.scale = 1.0f / std::sqrt(float(m.head_dim));
    p.rope = {rope.inv_freq, m.head_dim, false, 1.0f, rope.table, rope.positions};
    p.keys_rotated = mode != Mode::kLazyK;
    return p;
}

void bench_decode(CudaBackend& be, const Model& m, const Cache& cache, const RopeTables& rope, double copy_bw,
                  const std::vector<int>& batches, const std::vector<int>& contexts, std::mt19937_64& rng) {
    constexpr int kTail = 64, kBlock = 16;
    std::vector<int32_t> perm(cache.num_blocks);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    float* q = device_alloc<float>(size_t(256) * m.heads * m.head_dim);
    float* out = device_alloc<float>(size_t(256) * m.heads * m.head_dim);
    fill_random_f32<<<1024, 256>>>(q, size_t(256) * m.heads * m.head_dim, 3);
    BENCH_CHECK(cudaGetLastError());
    BENCH_CHECK(cudaDeviceSynchronize());
    for (int batch : batches) {
        for (int ctx : contexts) {
            for (int doc : {128, 1024}) {
                double lazy_t = 0.0;
                for (Mode mode : {Mode::kLazy, Mode::kDelta0, Mode::kLazyK}) {
                    std::vector<int32_t> block_ids, q_pos;
                    std::vector<AttentionSpan> spans;
                    std::vector<AttentionSeq> seqs;
                    size_t next_free = 0;
                    for (int s = 0; s < batch; ++s) {
                        const int span_begin = int(spans.size());
                        add_sequence(ctx, doc, kTail, kBlock, mode, perm, next_free, block_ids, spans);
                        seqs.push_back({s, 1, span_begin, int(spans.size())});
                        q_pos.push_back(ctx - 1);
                    }
                    int32_t* d_blocks = device_copy(block_ids);
                    int32_t* d_pos = device_copy(q_pos);
                    AttentionSpan* d_spans = device_copy(spans);
                    AttentionSeq* d_seqs = device_copy(seqs);
                    CudaAttentionParams p = base_params(m, cache, rope, mode);
                    p.q = q;
                    p.q_pos = d_pos;
                    p.out = out;
                    p.block_ids = d_blocks;
                    p.spans = d_spans;
                    p.seqs = d_seqs;
                    p.num_seqs = batch;
                    p.max_queries_per_seq = 1;
                    p.max_kv_tokens = ctx;
                    const double t = time_op(be.stream(), [&] { return be.attention_decode(p); });
                    const bool finite = output_finite(out, size_t(batch) * m.heads * m.head_dim);
                    const double bytes = 2.0 * 2.0 * double(batch) * ctx * m.kv_heads * m.head_dim;
                    const double gbps = bytes / t * 1e-9;
                    if (mode == Mode::kLazy) lazy_t = t;
                    const int splits = lazyattn::backend::cuda::decode_num_splits(p, be.num_sms());
                    std::printf(
                        "decode %-4s b=%-3d ctx=%-5d doc=%-4d %-6s splits=%-3d %9.1f us %7.0f GB/s %5.1f%% of copy  "
                        "x%.2f vs lazy%s\n",
                        m.name, batch, ctx, doc, mode_name(mode), splits, t * 1e6, gbps, 100.0 * bytes / t / copy_bw,
                        t / lazy_t, finite ? "" : "  NON-FINITE OUTPUT");
                    char line[512];
                    std::snprintf(line, sizeof line,
                                  "{\"bench\":\"decode\",\"model\":\"%s\",\"batch\":%d,\"context\":%d,\"doc_len\":%d,"
                                  "\"mode\":\"%s\",\"splits\":%d,\"time_us\":%.2f,\"gbps\":%.1f,\"copy_ratio\":%.4f,"
                                  "\"finite\":%s}",
                                  m.name, batch, ctx, doc, mode_name(mode), splits, t * 1e6, gbps, bytes / t / copy_bw,
                                  finite ? "true" : "false");
                    print_json(line);
                    BENCH_CHECK(cudaFree(d_blocks));
                    BENCH_CHECK(cudaFree(d_pos));
                    BENCH_CHECK(cudaFree(d_spans));
                    BENCH_CHECK(cudaFree(d_seqs));
                }
            }
        }
    }
    BENCH_CHECK(cudaFree(q));
    BENCH_CHECK(cudaFree(out));
}

void bench_prefill(CudaBackend& be, const Model& m, const Cache& cache, const RopeTables& rope,
                   const std::vector<int>& lengths) {
    constexpr int kDoc = 1024, kBlock = 16;
    for (int len : lengths) {
        float* q = device_alloc<float>(size_t(len) * m.heads * m.head_dim);
        float* out = device_alloc<float>(size_t(len) * m.heads * m.head_dim);
        fill_random_f32<<<1024, 256>>>(q, size_t(len) * m.heads * m.head_dim, 5);
        BENCH_CHECK(cudaGetLastError());
        BENCH_CHECK(cudaDeviceSynchronize());
        std::vector<int32_t> q_pos(len);
        std::iota(q_pos.begin(), q_pos.end(), 0);
        double lazy_t = 0.0;
        for (Mode mode : {Mode::kLazy, Mode::kDelta0, Mode::kLazyK}) {
            std::vector<int32_t> blocks(size_t(len) / kBlock + 2);
            std::iota(blocks.begin(), blocks.end(), 0);
            std::vector<int32_t> block_ids;
            std::vector<AttentionSpan> spans;
            size_t next_free = 0;
            // Documents of kDoc tokens; the last document is the "tail" (stored at its positions).
            add_sequence(len, kDoc, std::min(kDoc, len), kBlock, mode, blocks, next_free, block_ids, spans);
            const std::vector<AttentionSeq> seqs = {{0, len, 0, int(spans.size())}};
            int32_t* d_blocks = device_copy(block_ids);
            int32_t* d_pos = device_copy(q_pos);
            AttentionSpan* d_spans = device_copy(spans);
            AttentionSeq* d_seqs = device_copy(seqs);
            CudaAttentionParams p = base_params(m, cache, rope, mode);
            p.q = q;
            p.q_pos = d_pos;
            p.out = out;
            p.block_ids = d_blocks;
            p.spans = d_spans;
            p.seqs = d_seqs;
            p.num_seqs = 1;
            p.max_queries_per_seq = len;
            p.max_kv_tokens = len;
            const double t = time_op(be.stream(), [&] { return be.attention_prefill(p); });
            const bool finite = output_finite(out, size_t(len) * m.heads * m.head_dim);
            const double flops = 4.0 * m.head_dim * m.heads * (double(len) * (len + 1) / 2.0);
            if (mode == Mode::kLazy) lazy_t = t;
            std::printf("prefill %-4s L=%-5d %-6s %9.1f us %7.1f TFLOP/s  x%.2f vs lazy%s\n", m.name, len,
                        mode_name(mode), t * 1e6, flops / t * 1e-12, t / lazy_t, finite ? "" : "  NON-FINITE OUTPUT");
            char line[512];
            std::snprintf(line, sizeof line,
                          "{\"bench\":\"prefill\",\"model\":\"%s\",\"length\":%d,\"doc_len\":%d,\"mode\":\"%s\","
                          "\"time_us\":%.2f,\"tflops\":%.2f,\"finite\":%s}",
                          m.name, len, kDoc, mode_name(mode), t * 1e6, flops / t * 1e-12, finite ? "true" : "false");
            print_json(line);
            BENCH_CHECK(cudaFree(d_blocks));
            BENCH_CHECK(cudaFree(d_pos));
            BENCH_CHECK(cudaFree(d_spans));
            BENCH_CHECK(cudaFree(d_seqs));
        }
        BENCH_CHECK(cudaFree(q));
        BENCH_CHECK(cudaFree(out));
    }
}

}  // namespace

int main(int argc, char** argv) {
    const char* json_path = nullptr;
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
            json_path = argv[++i];
        } else if (std::strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else {
            std::fprintf(stderr, "usage: %s [--json FILE] [--quick]\n", argv[0]);
            return 2;
        }
    }
    std::string why;
    if (!lazyattn::backend::cuda::cuda_device_available(&why)) {
        std::fprintf(stderr, "bench_cuda_attention: no CUDA device: %s\n", why.c_str());
        return 1;
    }
    auto created = CudaBackend::create(0);
    if (!created.ok()) {
        std::fprintf(stderr, "bench_cuda_attention: %s\n", created.status().to_string().c_str());
        return 1;
    }
    CudaBackend& be = **created;
    if (json_path) {
        g_json = std::fopen(json_path, "w");
        if (!g_json) {
            std::fprintf(stderr, "cannot write %s\n", json_path);
            return 1;
        }
    }
    cudaDeviceProp prop{};
    BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
    const double copy_bw = copy_bandwidth(be.stream());
    std::printf("device: %s, %d SMs, %.1f GiB; copy bandwidth (read+write) %.0f GB/s; timing with %s\n", prop.name,
                prop.multiProcessorCount, double(prop.totalGlobalMem) / double(1 << 30), copy_bw * 1e-9,
                g_use_graphs ? "CUDA graphs" : "plain launches");
    char line[512];
    std::snprintf(line, sizeof line, "{\"bench\":\"copy\",\"device\":\"%s\",\"sms\":%d,\"gbps\":%.1f}", prop.name,
                  prop.multiProcessorCount, copy_bw * 1e-9);
    print_json(line);

    const std::vector<int> batches = quick ? std::vector<int>{1, 16} : std::vector<int>{1, 4, 16, 64, 256};
    const std::vector<int> contexts = quick ? std::vector<int>{1024, 4096} : std::vector<int>{1024, 4096, 16384};
    const std::vector<int> lengths = quick ? std::vector<int>{1024} : std::vector<int>{1024, 2048, 4096, 8192};
    const int max_batch = batches.back(), max_ctx = contexts.back();
    const Model models[] = {{"8B", 32, 8, 128}, {"1B", 32, 8, 64}};
    std::mt19937_64 rng(1234);
    for (const Model& m : models) {
        Cache cache;
        cache.num_blocks = size_t(max_batch) * (max_ctx / 16 + 8);
        const size_t elems = cache.num_blocks * m.kv_heads * 16 * m.head_dim;
        cache.k = device_alloc<__nv_bfloat16>(elems);
        cache.v = device_alloc<__nv_bfloat16>(elems);
        fill_random_bf16<<<4096, 256>>>(cache.k, elems, 11);
        fill_random_bf16<<<4096, 256>>>(cache.v, elems, 12);
        BENCH_CHECK(cudaGetLastError());
        BENCH_CHECK(cudaDeviceSynchronize());
        const RopeTables rope = make_rope(m.head_dim, std::max(max_ctx, lengths.back()) + 1);
        std::printf("\n== %s: %d heads, %d KV heads, head_dim %d; KV cache %.1f GiB ==\n", m.name, m.heads, m.kv_heads,
                    m.head_dim, 2.0 * double(elems) * 2.0 / double(1 << 30));
        bench_decode(be, m, cache, rope, copy_bw, batches, contexts, rng);
        bench_prefill(be, m, cache, rope, lengths);
        BENCH_CHECK(cudaFree(cache.k));
        BENCH_CHECK(cudaFree(cache.v));
        BENCH_CHECK(cudaFree(rope.inv_freq));
        BENCH_CHECK(cudaFree(rope.table));
    }
    if (g_json) std::fclose(g_json);
    return 0;
}
