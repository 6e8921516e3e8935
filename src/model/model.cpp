#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "loader/ggml_type.h"

namespace lazyattn::model {

Expected<std::unique_ptr<Model>> Model::load(const std::string& path, backend::Backend* backend,
                                             const WeightOptions& options) {
    std::unique_ptr<Model> m(new Model());
    m->backend_ = backend;
    LA_ASSIGN_OR_RETURN(m->file_, loader::GgufFile::open(path));
    LA_ASSIGN_OR_RETURN(m->config_, ModelConfig::from_gguf(*m->file_));
    LA_RETURN_IF_ERROR(m->config_.validate());
    const ModelConfig& c = m->config_;
    LA_RETURN_IF_ERROR(m->init_rope(c.rope, c.context_length, &m->rope_global_));
    if (c.sliding_window > 0) LA_RETURN_IF_ERROR(m->init_rope(c.rope_local, c.context_length, &m->rope_local_));
    backend::ModelRequirements req;
    req.architecture = c.traits().name;
    req.geglu = c.traits().activation == FfnActivation::kGeluTanh;
    req.head_dim = c.head_dim;
    req.rope = m->rope_global_.params;
    req.sliding_window = c.sliding_window > 0;
    LA_RETURN_IF_ERROR(backend->check_supported(req));
    LA_ASSIGN_OR_RETURN(m->weights_, load_weights(*m->file_, m->config_, options));
    LA_RETURN_IF_ERROR(m->prepare_weights());
    return m;
}

Expected<const float*> Model::resident(const std::vector<float>& v) {
    if (v.empty()) return static_cast<const float*>(nullptr);
    if (backend_->host_memory()) return v.data();
    LA_ASSIGN_OR_RETURN(std::unique_ptr<backend::Buffer> buf, backend_->allocate(sizeof(float) * v.size()));
    backend_->upload(buf->data(), v.data(), sizeof(float) * v.size());
    const float* p = static_cast<const float*>(buf->data());
    resident_.push_back(std::move(buf));
    return p;
}

Status Model::prepare_weights() {
    // A host-memory backend computes on fp32 matrices as they are; any other needs every matrix
    // in its memory, so it is handed the fp32 ones too.
    const bool host = backend_->host_memory();
    // A weight the backend copied into its own layout is no longer read from the file in a
    // matmul, so its pages leave resident memory (else a repacked model would count twice).
    auto prepare = [&](Linear& lin) -> Status {
        LA_ASSIGN_OR_RETURN(lin.bias_resident, resident(lin.bias));
        if (lin.out_dim == 0) return {};
        if (lin.type != kernels::GgmlType::kF32 && lin.w_quant != nullptr) {
            lin.prepared = backend_->prepare_weight(lin.w_quant, lin.type, lin.in_dim, lin.out_dim);
            if (lin.prepared != nullptr) {
                file_->drop_resident(
                    lin.w_quant,
                    loader::ggml_row_size(static_cast<loader::GgmlType>(lin.type), lin.in_dim) * size_t(lin.out_dim));
            }
        } else if (!host) {
            lin.prepared = backend_->prepare_weight(lin.data(), lin.type, lin.in_dim, lin.out_dim);
        }
        return backend_->status();
    };
    // The token embedding is a matmul weight only when it is also the LM head (tied); otherwise
    // only looked up by rows.
    Linear& embd = weights_.token_embd;
    if (weights_.lm_head.out_dim == 0) {
        LA_RETURN_IF_ERROR(prepare(embd));
    } else {
        embedding_prepared_ = backend_->prepare_embedding(embd.data(), embd.type, embd.out_dim, embd.in_dim);
        LA_RETURN_IF_ERROR(backend_->status());
    }
    LA_RETURN_IF_ERROR(prepare(weights_.lm_head));
    for (LayerWeights& lw : weights_.layers) {
        for (Linear* lin : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down}) {
            LA_RETURN_IF_ERROR(prepare(*lin));
        }
        LayerNorms n{};
        LA_ASSIGN_OR_RETURN(n.attn_norm, resident(lw.attn_norm));
        LA_ASSIGN_OR_RETURN(n.ffn_norm, resident(lw.ffn_norm));
        LA_ASSIGN_OR_RETURN(n.attn_post_norm, resident(lw.attn_post_norm));
        LA_ASSIGN_OR_RETURN(n.ffn_post_norm, resident(lw.ffn_post_norm));
        LA_ASSIGN_OR_RETURN(n.q_norm, resident(lw.q_norm));
        LA_ASSIGN_OR_RETURN(n.k_norm, resident(lw.k_norm));
        norms_.push_back(n);
    }
    LA_ASSIGN_OR_RETURN(output_norm_, resident(weights_.output_norm));
    return backend_->status();
}

Status Model::init_rope(const RopeConfig& rc, int32_t num_positions, RopeTables* out) {
    const int32_t half = rc.num_rotary_dims / 2;
    out->inv_freq.resize(half);
    for (int32_t i = 0; i < half; ++i) {
        double f = std::pow(double(rc.freq_base), -2.0 * i / double(rc.num_rotary_dims));
        if (!rc.freq_factors.empty()) f /= rc.freq_factors[i];
        out->inv_freq[i] = float(f);
    }
    // Angles are computed in double from the float frequencies, so table and direct computation
    // (used past the table's end) agree exactly.
    out->cos_sin_table.resize(int64_t(num_positions) * half * 2);
    for (int32_t p = 0; p < num_positions; ++p) {
        for (int32_t i = 0; i < half; ++i) {
            const double angle = double(p) * rc.linear_scale * double(out->inv_freq[i]);
            out->cos_sin_table[(int64_t(p) * half + i) * 2] = float(std::cos(angle) * rc.attn_factor);
            out->cos_sin_table[(int64_t(p) * half + i) * 2 + 1] = float(std::sin(angle) * rc.attn_factor);
        }
    }
    kernels::RopeParams& r = out->params;
    LA_ASSIGN_OR_RETURN(r.inv_freq, resident(out->inv_freq));
    r.rotary_dims = rc.num_rotary_dims;
    r.neox = rc.pairing == RopePairing::kNeox;
    r.position_scale = rc.linear_scale;
    LA_ASSIGN_OR_RETURN(r.cos_sin_table, resident(out->cos_sin_table));
    r.table_positions = num_positions;
    r.mscale = rc.attn_factor;
    out->rerotation = r;
    out->rerotation.mscale = 1.0f;
    out->rerotation.cos_sin_table = nullptr;
    out->rerotation.table_positions = 0;
    return {};
}

template <typename T>
Expected<const T*> Model::on_backend(const std::vector<T>& host, backend::BackendArray<T>& staging) {
    if (backend_->host_memory()) return host.data();
    LA_RETURN_IF_ERROR(staging.assign(*backend_, host.data(), int64_t(host.size())));
    return static_cast<const T*>(staging.data());
}

Status Model::upload_plan(const ForwardBatch& batch, StepPlan* plan) {
    LA_ASSIGN_OR_RETURN(plan->token_ids, on_backend(batch.token_ids, token_ids_));
    LA_ASSIGN_OR_RETURN(plan->positions, on_backend(batch.positions, positions_));
    LA_ASSIGN_OR_RETURN(plan->store_positions, on_backend(batch.store_positions, store_positions_));
    LA_ASSIGN_OR_RETURN(plan->slot_mapping, on_backend(batch.slot_mapping, slot_mapping_));
    LA_ASSIGN_OR_RETURN(plan->block_ids, on_backend(batch.block_ids, block_ids_));
    LA_ASSIGN_OR_RETURN(plan->logit_rows, on_backend(batch.logit_rows, logit_rows_));
    LA_ASSIGN_OR_RETURN(plan->spans, on_backend(batch.spans, spans_));
    plan->overrides = nullptr;
    if (!batch.overrides.empty()) {
        LA_ASSIGN_OR_RETURN(plan->overrides, on_backend(batch.overrides, overrides_));
    }
    LA_ASSIGN_OR_RETURN(plan->seqs, on_backend(batch.seqs, seqs_));
    // Host-side facts a device kernel launch is shaped by (it cannot read the arrays above).
    plan->max_queries_per_seq = 0;
    plan->max_kv_tokens = 0;
    for (const kernels::AttentionSeq& s : batch.seqs) {
        int32_t tokens = 0;
        for (int32_t i = s.span_begin; i < s.span_end; ++i) tokens += batch.spans[i].num_tokens;
        plan->max_queries_per_seq = std::max(plan->max_queries_per_seq, s.num_queries);
        plan->max_kv_tokens = std::max(plan->max_kv_tokens, tokens);
    }
    return {};
}

bool Model::samples_on_device(const std::vector<backend::SampleRow>& rows) const {
    if (!backend_->device_sampling() || backend_->host_memory()) return false;
    if (config_.final_logit_softcap <= 0.0f) return true;
    return std::all_of(rows.begin(), rows.end(), [](const backend::SampleRow& r) { return r.temperature <= 0.0f; });
}

Status Model::begin_step(const ForwardBatch& batch, backend::KvMemory& kv, StepPlan* plan) {
    const kv::KvShape& shape = kv.shape();
    const int32_t n = batch.num_rows();
    const int64_t hidden = config_.hidden_dim;
    const int64_t q_dim = config_.q_dim(), kv_dim = config_.kv_dim();
    backend::Backend& be = *backend_;
    LA_RETURN_IF_ERROR(x_.reserve(be, n * hidden));
    LA_RETURN_IF_ERROR(h_.reserve(be, n * std::max({hidden, int64_t(config_.ffn_dim), q_dim})));
    LA_RETURN_IF_ERROR(q_.reserve(be, n * q_dim));
    LA_RETURN_IF_ERROR(attn_.reserve(be, n * q_dim));
    LA_RETURN_IF_ERROR(k_.reserve(be, n * kv_dim));
    LA_RETURN_IF_ERROR(v_.reserve(be, n * kv_dim));
    LA_RETURN_IF_ERROR(gate_.reserve(be, n * config_.ffn_dim));
    LA_RETURN_IF_ERROR(up_.reserve(be, n * config_.ffn_dim));
    *plan = StepPlan{};
    LA_RETURN_IF_ERROR(upload_plan(batch, plan));
    // Once per step: every layer's attention shares the layout.
    kernels::AttentionStep step;
    step.seqs = batch.seqs.data();
    step.num_seqs = int32_t(batch.seqs.size());
    step.spans = batch.spans.data();
    step.overrides = batch.overrides.empty() ? nullptr : batch.overrides.data();
    step.num_spans = int32_t(batch.spans.size());
    step.block_ids = batch.block_ids.data();
    step.num_block_ids = int32_t(batch.block_ids.size());
    step.q_pos = batch.positions.data();
    step.num_rows = n;
    step.num_heads = config_.num_heads;
    step.num_kv_heads = config_.num_kv_heads;
    step.head_dim = config_.head_dim;
    step.block_size = shape.block_size;
    step.k_dtype = shape.k_dtype;
    step.v_dtype = shape.v_dtype;
    LA_RETURN_IF_ERROR(be.plan_attention(step));

    const Linear& embd = weights_.token_embd;
    const void* embd_prepared = weights_.lm_head.out_dim == 0 ? embd.prepared.get() : embedding_prepared_.get();
    be.embedding_lookup(
        {embd.data(), embd.type, hidden, embd_prepared, plan->token_ids, n, config_.embedding_scale, x_.data()});
    return {};
}

Status Model::check_kv_shape(const ForwardBatch& batch, const backend::KvMemory& kv) const {
    const kv::KvShape& shape = kv.shape();
    if (shape.num_layers != config_.num_layers || shape.num_kv_heads != config_.num_kv_heads ||
        shape.head_dim != config_.head_dim) {
        return internal_error("KV storage shape does not match the model");
    }
    return batch.validate(shape.num_blocks, shape.block_size, config_.vocab_size);
}

Status Model::forward(const ForwardBatch& batch, backend::KvMemory& kv, std::vector<float>* logits,
                      const std::vector<backend::SampleRow>* sample_rows, std::vector<int32_t>* tokens,
                      std::vector<float>* key_mass, const std::function<void()>& before_sampling) {
    LA_RETURN_IF_ERROR(check_kv_shape(batch, kv));
    const int32_t n = batch.num_rows();
    if (n == 0) {  // copies only
        for (int32_t l = 0; l < config_.num_layers; ++l) run_kv_copies(l, batch, kv);
        backend_->synchronize();
        logits->clear();
        return backend_->status();
    }
    const int64_t hidden = config_.hidden_dim;
    backend::Backend& be = *backend_;
    if (!batch.mass_seqs.empty() && (key_mass == nullptr || !be.attention_mass_supported() || !be.host_memory())) {
        return invalid_argument("forward: attention mass asked of a backend that cannot measure it");
    }
    StepPlan plan{};
    LA_RETURN_IF_ERROR(begin_step(batch, kv, &plan));
    if (!batch.mass_seqs.empty()) {
        mass_seqs_.clear();
        int64_t total = 0;
        for (const int32_t q : batch.mass_seqs) {
            const kernels::AttentionSeq& seq = batch.seqs[size_t(q)];
            mass_seqs_.push_back(seq);
            for (int32_t si = seq.span_begin; si < seq.span_end; ++si) total += batch.spans[size_t(si)].num_tokens;
        }
        key_mass->assign(size_t(total), 0.0f);
        layer_mass_.resize(size_t(total));
        plan.mass_seqs = mass_seqs_.data();
        plan.num_mass_seqs = int32_t(mass_seqs_.size());
        plan.key_mass = key_mass;
    }
    for (int32_t l = 0; l < config_.num_layers; ++l) run_layer(l, batch, plan, kv, n);

    // Final norm and LM head, only for the rows whose logits are wanted.
    const int64_t num_out = int64_t(batch.logit_rows.size());
    LA_RETURN_IF_ERROR(gathered_.reserve(be, num_out * hidden));
    LA_RETURN_IF_ERROR(normed_.reserve(be, num_out * hidden));
    be.gather_rows(x_.data(), plan.logit_rows, int32_t(num_out), hidden, gathered_.data());
    be.rmsnorm(gathered_.data(), output_norm_, normed_.data(), num_out, hidden, config_.norm_eps);
    // Rows sampled where the logits are: one id per row comes back, not the logits.
    const bool on_device = sample_rows != nullptr && tokens != nullptr && samples_on_device(*sample_rows);
    if (on_device && int64_t(sample_rows->size()) != num_out) {
        return internal_error("forward: " + std::to_string(sample_rows->size()) + " sample rows for " +
                              std::to_string(num_out) + " logit rows");
    }
    if (tokens != nullptr) tokens->clear();
    logits->resize(on_device ? 0 : num_out * config_.vocab_size);
    // A host-memory backend writes the logits in place; any other writes its own array, read back.
    float* out = logits->data();
    if (!be.host_memory()) {
        LA_RETURN_IF_ERROR(logits_.reserve(be, num_out * config_.vocab_size));
        out = logits_.data();
    }
    if (num_out > 0) be.matmul(weights_.output().params(normed_.data(), out, num_out));
    if (on_device && num_out > 0) {
        tokens->resize(size_t(num_out));
        if (before_sampling) before_sampling();
        be.sample_rows(out, int32_t(num_out), config_.vocab_size, sample_rows->data(), tokens->data());
    } else if (!be.host_memory() && num_out > 0) {
        be.download(logits->data(), out, sizeof(float) * logits->size());
    }
    be.synchronize();
    LA_RETURN_IF_ERROR(be.status());
    // On the host, on the logits as returned.
    if (const float cap = config_.final_logit_softcap; cap > 0.0f) {
        for (float& v : *logits) v = cap * std::tanh(v / cap);
    }
    return {};
}

Status Model::measure_kv_deviation(const ForwardBatch& batch, backend::KvMemory& kv, std::vector<float>* deviation) {
    LA_RETURN_IF_ERROR(check_kv_shape(batch, kv));
    backend::Backend& be = *backend_;
    if (!be.kv_deviation_supported() || !be.host_memory()) {
        return invalid_argument("measure_kv_deviation: this backend cannot measure KV deviation");
    }
    if (config_.num_layers < kDeviationLayer + 1) {
        return invalid_argument("measure_kv_deviation: the model has " + std::to_string(config_.num_layers) +
                                " layer(s); the deviation is measured in layer " + std::to_string(kDeviationLayer));
    }
    if (!batch.kv_copies.empty() || !batch.logit_rows.empty() || !batch.mass_seqs.empty()) {
        return invalid_argument("measure_kv_deviation: a measuring plan has no copies, logits or mass");
    }
    const int32_t n = batch.num_rows();
    deviation->assign(size_t(n), 0.0f);
    if (n == 0) return {};
    StepPlan plan{};
    LA_RETURN_IF_ERROR(begin_step(batch, kv, &plan));
    // The layers before the measured one in full, nothing stored: the rows read the cached keys
    // of their own tokens, equal to theirs in the first layer (the context has not reached them yet).
    for (int32_t l = 0; l < kDeviationLayer; ++l) {
        project_qkv(l, batch, plan, n);
        attend(l, batch, plan, kv, n);
        run_ffn(l, n);
    }
    project_qkv(kDeviationLayer, batch, plan, n);
    be.kv_deviation(kv, kDeviationLayer, k_.data(), v_.data(), plan.slot_mapping, n, deviation->data());
    be.synchronize();
    return be.status();
}

void Model::run_kv_copies(int32_t layer, const ForwardBatch& batch, backend::KvMemory& kv) {
    for (const KvBlockCopy& c : batch.kv_copies) {
        backend_->kv_copy_rotate(
            kv, layer, {c.src_blocks.data(), c.dst_blocks.data(), c.num_tokens, c.delta, rerotation_rope(layer)});
    }
}

void Model::run_layer(int32_t layer, const ForwardBatch& batch, const StepPlan& plan, backend::KvMemory& kv,
                      int32_t n) {
    run_attention(layer, batch, plan, kv, n);
    run_ffn(layer, n);
}

void Model::run_attention(int32_t layer, const ForwardBatch& batch, const StepPlan& plan, backend::KvMemory& kv,
                          int32_t n) {
    project_qkv(layer, batch, plan, n);
    run_kv_copies(layer, batch, kv);  // before this layer's rows are stored: they may reuse a copy's source
    backend_->kv_store(kv, layer, k_.data(), v_.data(), plan.slot_mapping, n);
    attend(layer, batch, plan, kv, n);
}

// q, k, v = rope(norm_q(W_q h)), rope(norm_k(W_k h)), W_v h with h = norm(x); keys rotated at
// their store positions (where the pool keeps them), unless stored raw.
void Model::project_qkv(int32_t layer, const ForwardBatch& batch, const StepPlan& plan, int32_t n) {
    const LayerWeights& w = weights_.layers[layer];
    const LayerNorms& norm = norms_[layer];
    const ModelConfig& c = config_;
    backend::Backend& be = *backend_;
    be.rmsnorm(x_.data(), norm.attn_norm, h_.data(), n, c.hidden_dim, c.norm_eps);
    const kernels::MatmulParams qkv[] = {w.wq.params(h_.data(), q_.data(), n), w.wk.params(h_.data(), k_.data(), n),
                                         w.wv.params(h_.data(), v_.data(), n)};
    be.matmuls(qkv, 3);
    if (!w.q_norm.empty()) {  // one RMSNorm per head: rows of head_dim
        be.rmsnorm(q_.data(), norm.q_norm, q_.data(), int64_t(n) * c.num_heads, c.head_dim, c.norm_eps);
        be.rmsnorm(k_.data(), norm.k_norm, k_.data(), int64_t(n) * c.num_kv_heads, c.head_dim, c.norm_eps);
    }
    if (batch.keys_rotated) {
        be.rope_apply({k_.data(), plan.store_positions, n, c.num_kv_heads, c.head_dim, rope(layer)});
    }
}

// x += [post_norm](W_o attention(q, cached keys and values)).
void Model::attend(int32_t layer, const ForwardBatch& batch, const StepPlan& plan, backend::KvMemory& kv, int32_t n) {
    const LayerWeights& w = weights_.layers[layer];
    const LayerNorms& norm = norms_[layer];
    const ModelConfig& c = config_;
    const int64_t hidden = c.hidden_dim;
    const kernels::RopeParams& rope = this->rope(layer);
    backend::Backend& be = *backend_;

    kernels::AttentionParams ap{};
    ap.q = q_.data();
    ap.q_pos = plan.positions;
    ap.out = attn_.data();
    ap.k_cache = kv.k(layer);
    ap.v_cache = kv.v(layer);
    ap.k_dtype = kv.shape().k_dtype;
    ap.v_dtype = kv.shape().v_dtype;
    ap.block_ids = plan.block_ids;
    ap.spans = plan.spans;
    ap.overrides = plan.overrides;
    ap.seqs = plan.seqs;
    ap.num_seqs = int32_t(batch.seqs.size());
    ap.num_heads = c.num_heads;
    ap.num_kv_heads = c.num_kv_heads;
    ap.head_dim = c.head_dim;
    ap.block_size = kv.shape().block_size;
    ap.scale = c.attention_scale;
    ap.rope = rope;
    ap.keys_rotated = batch.keys_rotated;
    ap.sliding_window = c.is_sliding(layer) ? c.sliding_window : 0;
    ap.max_queries_per_seq = plan.max_queries_per_seq;
    ap.max_kv_tokens = plan.max_kv_tokens;
    ap.planned = true;
    be.attention(ap);
    if (plan.key_mass != nullptr &&
        (batch.mass_layers.empty() ||
         std::find(batch.mass_layers.begin(), batch.mass_layers.end(), layer) != batch.mass_layers.end())) {
        kernels::AttentionParams mp = ap;
        mp.seqs = plan.mass_seqs;
        mp.num_seqs = plan.num_mass_seqs;
        mp.out = nullptr;
        mp.planned = false;
        be.attention_mass(mp, layer_mass_.data());
        std::vector<float>& sum = *plan.key_mass;
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += layer_mass_[i];
    }

    be.matmul(w.wo.params(attn_.data(), h_.data(), n));
    if (!w.attn_post_norm.empty()) {
        be.rmsnorm(h_.data(), norm.attn_post_norm, h_.data(), n, hidden, c.norm_eps);
    }
    be.add_inplace(x_.data(), h_.data(), int64_t(n) * hidden);
}

// x += [post_norm](W_down act(W_gate h) * W_up h), h = norm(x).
void Model::run_ffn(int32_t layer, int32_t n) {
    const LayerWeights& w = weights_.layers[layer];
    const LayerNorms& norm = norms_[layer];
    const ModelConfig& c = config_;
    const int64_t hidden = c.hidden_dim;
    backend::Backend& be = *backend_;

    be.rmsnorm(x_.data(), norm.ffn_norm, h_.data(), n, hidden, c.norm_eps);
    const kernels::MatmulParams gate_up[] = {w.w_gate.params(h_.data(), gate_.data(), n),
                                             w.w_up.params(h_.data(), up_.data(), n)};
    be.matmuls(gate_up, 2);
    const int64_t num = int64_t(n) * c.ffn_dim;
    if (c.traits().activation == FfnActivation::kGeluTanh) {
        be.geglu(gate_.data(), up_.data(), gate_.data(), num);
    } else {
        be.swiglu(gate_.data(), up_.data(), gate_.data(), num);
    }
    be.matmul(w.w_down.params(gate_.data(), h_.data(), n));
    if (!w.ffn_post_norm.empty()) {
        be.rmsnorm(h_.data(), norm.ffn_post_norm, h_.data(), n, hidden, c.norm_eps);
    }
    be.add_inplace(x_.data(), h_.data(), int64_t(n) * hidden);
}

}  // namespace lazyattn::model
