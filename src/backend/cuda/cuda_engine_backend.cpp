#include "backend/cuda/cuda_engine_backend.h"

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend_array.h"
#include "backend/cuda/attention_decode.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_kv_memory.h"
#include "kernels/params/kv_dtype.h"
#include "loader/dequantize.h"
#include "loader/ggml_type.h"

namespace lazyattn::backend::cuda {
namespace {

class DeviceBuffer final : public backend::Buffer {
public:
    DeviceBuffer(void* p, size_t bytes) : Buffer(p, bytes) {}
    ~DeviceBuffer() override { cudaFree(data_); }
};

// A matrix [rows, cols] in bf16 on the device: a prepared weight or embedding table.
struct DeviceMatrix {
    std::unique_ptr<backend::Buffer> buf;
    int64_t rows = 0, cols = 0;
    const __nv_bfloat16* data() const { return static_cast<const __nv_bfloat16*>(buf->data()); }
};

class CudaEngineBackend final : public backend::Backend {
public:
    explicit CudaEngineBackend(std::unique_ptr<CudaBackend> cuda) : cuda_(std::move(cuda)) {}

    std::string name() const override { return "cuda"; }
    int num_threads() const override { return 1; }

    bool host_memory() const override { return false; }
    Expected<std::unique_ptr<backend::Buffer>> allocate(size_t bytes) override {
        void* p = nullptr;
        if (cudaMalloc(&p, std::max<size_t>(bytes, 1)) != cudaSuccess) {
            cudaGetLastError();
            return resource_exhausted("cannot allocate " + std::to_string(bytes) + " bytes of device memory");
        }
        return std::unique_ptr<backend::Buffer>(std::make_unique<DeviceBuffer>(p, bytes));
    }
    // Plain cudaMemcpy runs on the legacy default stream, which is ordered with the backend's
    // blocking stream: an upload lands after the ops issued before it, a download sees them.
    void upload(void* dst, const void* src, size_t bytes) override {
        record(cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "upload"));
    }
    void download(void* dst, const void* src, size_t bytes) override {
        record(cuda_->synchronize());
        record(cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "download"));
    }
    Status status() const override { return error_; }

    Status check_supported(const backend::ModelRequirements& r) const override {
        const std::string arch = "--device cuda: architecture " + r.architecture;
        if (r.geglu) return unsupported(arch + " needs GeGLU, which the CUDA backend does not have");
        if (r.head_dim != 64 && r.head_dim != 128) {
            return unsupported(arch + " has head_dim " + std::to_string(r.head_dim) +
                               "; the CUDA attention kernels take 64 or 128");
        }
        if (r.rope.mscale != 1.0f) {
            return unsupported(arch + " scales RoPE by an attention factor, which the CUDA kernels do not");
        }
        if (r.rope.neox && r.rope.rotary_dims % 16 != 0) {
            return unsupported(arch + " rotates " + std::to_string(r.rope.rotary_dims) +
                               " dims with neox pairing; the CUDA kernels need a multiple of 16");
        }
        return {};
    }

    void rmsnorm(const float* x, const float* w, float* out, int64_t rows, int64_t dim, float eps) override {
        record(cuda_->rmsnorm(x, w, out, rows, dim, eps));
    }
    void matmul(const kernels::MatmulParams& p) override { matmuls(&p, 1); }
    // Products of one input (Q/K/V, gate/up) round it to bf16 once.
    void matmuls(const kernels::MatmulParams* ps, int count) override {
        if (count == 0 || ps[0].num_rows == 0) return;
        const kernels::MatmulParams& first = ps[0];
        Status s = x_bf16_.reserve(*this, first.num_rows * first.in_dim);
        if (s.ok()) s = cuda_->to_bf16(first.x, x_bf16_.data(), first.num_rows * first.in_dim);
        for (int i = 0; i < count && s.ok(); ++i) {
            const kernels::MatmulParams& p = ps[i];
            const auto* w = static_cast<const DeviceMatrix*>(p.w_prepared);
            if (w == nullptr) {
                s = internal_error("cuda matmul: the weight was not prepared");
            } else if (p.x != first.x || p.in_dim != first.in_dim || p.num_rows != first.num_rows) {
                s = internal_error("cuda matmuls: the products do not share one input");
            } else {
                s = cuda_->gemm({x_bf16_.data(), w->data(), p.y, GemmOutType::kF32, p.num_rows, p.out_dim, p.in_dim});
                if (s.ok() && p.bias != nullptr) s = cuda_->add_bias(p.y, p.bias, p.num_rows, p.out_dim);
            }
        }
        record(s);
    }
    std::shared_ptr<const void> prepare_weight(const void* w, kernels::GgmlType type, int64_t in_dim,
                                               int64_t out_dim) override {
        return upload_matrix(w, type, out_dim, in_dim);
    }
    std::shared_ptr<const void> prepare_embedding(const void* table, kernels::GgmlType type, int64_t vocab_size,
                                                  int64_t dim) override {
        return upload_matrix(table, type, vocab_size, dim);
    }
    void swiglu(const float* gate, const float* up, float* out, int64_t n) override {
        record(cuda_->swiglu(gate, up, out, n));
    }
    void geglu(const float*, const float*, float*, int64_t) override {
        record(unsupported("cuda: GeGLU is not implemented (the model should have been refused at load)"));
    }
    void add_inplace(float* x, const float* y, int64_t n) override { record(cuda_->add_inplace(x, y, n)); }
    void gather_rows(const float* x, const int32_t* rows, int32_t num_rows, int64_t dim, float* out) override {
        // A row gather is an embedding lookup in an fp32 table (rows were checked by the plan).
        record(cuda_->embedding(x, rows, out, num_rows, dim, INT32_MAX));
    }
    void rope_apply(const kernels::RopeApplyParams& p) override { record(cuda_->rope_apply(p)); }
    // Once per step: decode sequences (one query row) and prefill sequences go to their own
    // kernels, so a mixed step's decode rows take the split-K decode kernel instead of a
    // prefill tile each; both sequence lists are uploaded and the split is chosen here, once.
    Status plan_attention(const kernels::AttentionStep& step) override {
        plan_ = {};
        std::vector<kernels::AttentionSeq> decode, prefill;
        for (int32_t i = 0; i < step.num_seqs; ++i) {
            const kernels::AttentionSeq& seq = step.seqs[i];
            if (seq.num_queries <= 0) continue;
            int32_t tokens = 0;
            for (int32_t si = seq.span_begin; si < seq.span_end; ++si) tokens += step.spans[si].num_tokens;
            if (seq.num_queries == 1) {
                decode.push_back(seq);
                plan_.decode_max_kv_tokens = std::max(plan_.decode_max_kv_tokens, tokens);
            } else {
                prefill.push_back(seq);
                plan_.prefill_max_kv_tokens = std::max(plan_.prefill_max_kv_tokens, tokens);
                plan_.prefill_max_queries = std::max(plan_.prefill_max_queries, seq.num_queries);
            }
        }
        LA_RETURN_IF_ERROR(decode_seqs_.assign(*this, decode.data(), int64_t(decode.size())));
        LA_RETURN_IF_ERROR(prefill_seqs_.assign(*this, prefill.data(), int64_t(prefill.size())));
        plan_.num_decode = int32_t(decode.size());
        plan_.num_prefill = int32_t(prefill.size());
        CudaAttentionParams shape{};
        shape.num_seqs = plan_.num_decode;
        shape.num_heads = step.num_heads;
        shape.num_kv_heads = step.num_kv_heads;
        shape.head_dim = step.head_dim;
        shape.max_kv_tokens = plan_.decode_max_kv_tokens;
        plan_.decode_splits = decode_num_splits(shape, cuda_->num_sms());
        plan_.valid = true;
        return {};
    }
    void attention(const kernels::AttentionParams& p) override {
        if (p.k_dtype != kernels::KvDtype::kBF16 || p.v_dtype != kernels::KvDtype::kBF16) {
            record(invalid_argument("cuda attention: the KV pool must be bf16"));
            return;
        }
        CudaAttentionParams c{};
        c.q = p.q;
        c.q_pos = p.q_pos;
        c.out = p.out;
        c.k_cache = static_cast<const __nv_bfloat16*>(p.k_cache);
        c.v_cache = static_cast<const __nv_bfloat16*>(p.v_cache);
        c.block_ids = p.block_ids;
        c.spans = p.spans;
        c.overrides = p.overrides;
        c.seqs = p.seqs;
        c.num_seqs = p.num_seqs;
        c.num_heads = p.num_heads;
        c.num_kv_heads = p.num_kv_heads;
        c.head_dim = p.head_dim;
        c.block_size = p.block_size;
        c.scale = p.scale;
        c.rope = p.rope;
        c.keys_rotated = p.keys_rotated;
        c.sliding_window = p.sliding_window;
        c.max_queries_per_seq = p.max_queries_per_seq;
        c.max_kv_tokens = p.max_kv_tokens;
        c.num_splits = 0;
        if (!p.planned || !plan_.valid) {
            record(cuda_->attention(c));
            return;
        }
        if (plan_.num_decode > 0) {
            CudaAttentionParams d = c;
            d.seqs = decode_seqs_.data();
            d.num_seqs = plan_.num_decode;
            d.max_queries_per_seq = 1;
            d.max_kv_tokens = plan_.decode_max_kv_tokens;
            d.num_splits = plan_.decode_splits;
            record(cuda_->attention_decode(d));
        }
        if (plan_.num_prefill > 0) {
            CudaAttentionParams f = c;
            f.seqs = prefill_seqs_.data();
            f.num_seqs = plan_.num_prefill;
            f.max_queries_per_seq = plan_.prefill_max_queries;
            f.max_kv_tokens = plan_.prefill_max_kv_tokens;
            record(cuda_->attention_prefill(f));
        }
    }
    bool device_sampling() const override { return true; }
    // The kernel's settings go up as one upload (temperatures, top-p, draws, top-k: four words a
    // row, after which the kernel writes the tokens), and only the tokens come back. An all-greedy
    // step uploads nothing (the argmax needs no settings). Structured-output rows first take
    // their grammars' masks (apply_row_bitmasks).
    void sample_rows(float* logits, int32_t num_rows, int32_t vocab_size, const backend::SampleRow* rows,
                     int32_t* tokens) override {
        const size_t n = size_t(num_rows);
        Status st = sample_args_.reserve(*this, 5 * int64_t(std::max<int32_t>(num_rows, 1)));
        if (!st.ok()) return record(st);
        if (st = apply_row_bitmasks(logits, num_rows, vocab_size, rows); !st.ok()) return record(st);
        int32_t* ids = sample_args_.data() + 4 * n;
        const bool greedy =
            std::all_of(rows, rows + n, [](const backend::SampleRow& r) { return r.temperature <= 0.0f; });
        if (greedy) {
            record(cuda_->argmax(logits, vocab_size, num_rows, vocab_size, ids));
        } else {
            sample_staging_.resize(4 * n);
            int32_t* w = sample_staging_.data();
            for (size_t r = 0; r < n; ++r) {
                w[r] = std::bit_cast<int32_t>(rows[r].temperature);
                w[n + r] = std::bit_cast<int32_t>(rows[r].top_p);
                w[2 * n + r] = std::bit_cast<int32_t>(rows[r].uniform);
                w[3 * n + r] = rows[r].top_k;
            }
            upload(sample_args_.data(), sample_staging_.data(), sizeof(int32_t) * 4 * n);
            const float* device_f = reinterpret_cast<const float*>(sample_args_.data());
            SampleParams p{};
            p.logits = logits;
            p.row_stride = vocab_size;
            p.num_rows = num_rows;
            p.vocab_size = vocab_size;
            p.temperature = device_f;
            p.top_p = device_f + n;
            p.uniform = device_f + 2 * n;
            p.top_k = sample_args_.data() + 3 * n;
            p.tokens = ids;
            record(cuda_->sample(p));
        }
        download(tokens, ids, sizeof(int32_t) * n);
    }

    // The bitmasks of the rows that carry one go up in one upload (4 bytes per 32 tokens, not
    // the row's logits coming down) and each masks its row in place (sampling.h), the rule
    // kernels::ref::apply_token_bitmask defines and the host sampler applies.
    Status apply_row_bitmasks(float* logits, int32_t num_rows, int32_t vocab_size, const backend::SampleRow* rows) {
        mask_staging_.clear();
        for (int32_t r = 0; r < num_rows; ++r) {
            if (rows[r].bitmask == nullptr) continue;
            mask_staging_.insert(mask_staging_.end(), rows[r].bitmask, rows[r].bitmask + rows[r].bitmask_words);
        }
        if (mask_staging_.empty()) return {};
        LA_RETURN_IF_ERROR(mask_words_.assign(*this, mask_staging_.data(), int64_t(mask_staging_.size())));
        int64_t offset = 0;
        for (int32_t r = 0; r < num_rows; ++r) {
            if (rows[r].bitmask == nullptr) continue;
            LA_RETURN_IF_ERROR(cuda_->apply_token_bitmask(logits + int64_t(r) * vocab_size, vocab_size, 1, vocab_size,
                                                          mask_words_.data() + offset, rows[r].bitmask_words));
            offset += rows[r].bitmask_words;
        }
        return {};
    }

    Expected<std::unique_ptr<backend::KvMemory>> allocate_kv(const kv::KvShape& shape) override {
        LA_ASSIGN_OR_RETURN(auto kv, CudaKvMemory::allocate(shape));
        return std::unique_ptr<backend::KvMemory>(std::move(kv));
    }
    void kv_store(backend::KvMemory& kv, int32_t layer, const float* k, const float* v, const int32_t* slots,
                  int32_t n) override {
        const kv::KvShape& s = kv.shape();
        KvStoreParams p{};
        p.k_rows = k;
        p.v_rows = v;
        p.slots = slots;
        p.rope_positions = nullptr;  // the model rotated the keys already where the mode wants it
        p.k_cache = static_cast<__nv_bfloat16*>(kv.k(layer));
        p.v_cache = static_cast<__nv_bfloat16*>(kv.v(layer));
        p.num_rows = n;
        p.num_kv_heads = s.num_kv_heads;
        p.head_dim = s.head_dim;
        p.block_size = s.block_size;
        record(cuda_->kv_store(p));
    }
    void kv_copy_rotate(backend::KvMemory& kv, int32_t layer, const backend::KvCopyRotateParams& p) override {
        const kv::KvShape& s = kv.shape();
        const int32_t num_blocks = (p.num_tokens + s.block_size - 1) / s.block_size;
        // The block lists arrive in host memory (one small plan entry per copy).
        Status st = copy_blocks_.reserve(*this, 2 * int64_t(num_blocks));
        if (!st.ok()) return record(st);
        upload(copy_blocks_.data(), p.src_blocks, sizeof(int32_t) * size_t(num_blocks));
        upload(copy_blocks_.data() + num_blocks, p.dst_blocks, sizeof(int32_t) * size_t(num_blocks));
        KvCopyRotateParams c{};
        c.k_cache = static_cast<__nv_bfloat16*>(kv.k(layer));
        c.v_cache = static_cast<__nv_bfloat16*>(kv.v(layer));
        c.layer_stride = 0;
        c.num_layers = 1;
        c.src_blocks = copy_blocks_.data();
        c.dst_blocks = copy_blocks_.data() + num_blocks;
        c.num_tokens = p.num_tokens;
        c.num_kv_heads = s.num_kv_heads;
        c.head_dim = s.head_dim;
        c.block_size = s.block_size;
        c.delta = p.delta;
        c.rope = p.rope;
        record(cuda_->kv_copy_rotate(c));
    }
    void embedding_lookup(const backend::EmbeddingParams& p) override {
        const auto* table = static_cast<const DeviceMatrix*>(p.prepared);
        if (table == nullptr) return record(internal_error("cuda embedding: the table was not prepared"));
        if (p.scale != 1.0f) return record(unsupported("cuda embedding: a scaled embedding is not implemented"));
        record(cuda_->embedding(table->data(), p.ids, p.out, p.num_rows, p.dim, table->rows));
    }
    void synchronize() override { record(cuda_->synchronize()); }

private:
    void record(const Status& s) {
        if (!s.ok() && error_.ok()) error_ = s;
    }

    // The matrix [rows, cols] of GGUF `type` (fp32 included) dequantized on the host a chunk of
    // rows at a time, rounded to bf16 and uploaded; nullptr (the error kept) on failure.
    std::shared_ptr<const void> upload_matrix(const void* src, kernels::GgmlType type, int64_t rows, int64_t cols) {
        auto m = std::make_shared<DeviceMatrix>();
        m->rows = rows;
        m->cols = cols;
        const size_t bf16_row = sizeof(__nv_bfloat16) * size_t(cols);
        auto buf = allocate(bf16_row * size_t(rows));
        if (!buf.ok()) return record(buf.status()), nullptr;
        m->buf = std::move(buf).value();
        const auto gtype = static_cast<loader::GgmlType>(type);
        const size_t src_row = loader::ggml_row_size(gtype, cols);
        const int64_t chunk = std::max<int64_t>(1, (int64_t(16) << 20) / std::max<int64_t>(cols, 1));
        std::vector<float> f32(size_t(std::min(chunk, rows)) * size_t(cols));
        std::vector<uint16_t> b16(f32.size());
        for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
            const int64_t nr = std::min(chunk, rows - r0);
            for (int64_t r = 0; r < nr; ++r) {
                const auto* row = static_cast<const uint8_t*>(src) + size_t(r0 + r) * src_row;
                const Status s = loader::dequantize_row(gtype, row, f32.data() + r * cols, cols);
                if (!s.ok()) return record(s), nullptr;
            }
            kernels::f32_to_kv(f32.data(), kernels::KvDtype::kBF16, b16.data(), nr * cols);
            upload(static_cast<char*>(m->buf->data()) + size_t(r0) * bf16_row, b16.data(), size_t(nr) * bf16_row);
        }
        if (!error_.ok()) return nullptr;
        return m;
    }

    std::unique_ptr<CudaBackend> cuda_;
    Status error_;
    backend::BackendArray<__nv_bfloat16> x_bf16_;  // a matmul's input in bf16
    backend::BackendArray<int32_t> copy_blocks_;   // a copy's source and destination block lists
    // The step's plan (plan_attention): its decode and prefill sequences on the device.
    struct StepPlan {
        bool valid = false;
        int32_t num_decode = 0, num_prefill = 0;
        int32_t decode_max_kv_tokens = 0, prefill_max_kv_tokens = 0, prefill_max_queries = 0;
        int decode_splits = 1;
    } plan_;
    backend::BackendArray<kernels::AttentionSeq> decode_seqs_, prefill_seqs_;
    backend::BackendArray<int32_t> sample_args_;  // sample_rows' settings, then its tokens
    std::vector<int32_t> sample_staging_;         // the settings on the host, before their upload
    backend::BackendArray<int32_t> mask_words_;   // the masked rows' grammar bitmasks, one after another
    std::vector<int32_t> mask_staging_;           // ... on the host, before their upload
};

}  // namespace

Expected<std::unique_ptr<backend::Backend>> make_cuda_engine_backend(int num_threads) {
    (void)num_threads;
    std::string why;
    if (!cuda_device_available(&why)) return unavailable("--device cuda: no usable CUDA device (" + why + ")");
    auto cuda = CudaBackend::create(0);
    if (!cuda.ok()) return unavailable("--device cuda: " + cuda.status().message());
    return std::unique_ptr<backend::Backend>(std::make_unique<CudaEngineBackend>(std::move(cuda).value()));
}

}  // namespace lazyattn::backend::cuda
