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
    LA_ASSIGN_OR_RETURN(m->weights_, load_weights(*m->file_, m->config_, options));
    m->prepare_weights();
    const ModelConfig& c = m->config_;
    init_rope(c.rope, c.context_length, &m->rope_global_);
    if (c.sliding_window > 0) init_rope(c.rope_local, c.context_length, &m->rope_local_);
    return m;
}

void Model::prepare_weights() {
    // A weight the backend copied into its own layout is no longer read from the file in a
    // matmul, so its pages leave resident memory (else a repacked model would count twice).
    auto prepare = [&](Linear& lin) {
        if (lin.type != kernels::WeightType::kF32 && lin.out_dim > 0 && lin.w_quant != nullptr) {
            lin.prepared = backend_->prepare_weight(lin.w_quant, lin.type, lin.in_dim, lin.out_dim);
            if (lin.prepared != nullptr) {
                file_->drop_resident(
                    lin.w_quant,
                    loader::ggml_row_size(static_cast<loader::GgmlType>(lin.type), lin.in_dim) * size_t(lin.out_dim));
            }
        }
    };
    // The token embedding is a matmul weight only when it is also the LM head (tied); otherwise
    // only looked up by rows.
    if (weights_.lm_head.out_dim == 0) prepare(weights_.token_embd);
    prepare(weights_.lm_head);
    for (LayerWeights& lw : weights_.layers) {
        for (Linear* lin : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down}) prepare(*lin);
    }
}

void Model::init_rope(const RopeConfig& rc, int32_t num_positions, RopeTables* out) {
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
    r.inv_freq = out->inv_freq.data();
    r.rotary_dims = rc.num_rotary_dims;
    r.neox = rc.pairing == RopePairing::kNeox;
    r.position_scale = rc.linear_scale;
    r.cos_sin_table = out->cos_sin_table.data();
    r.table_positions = num_positions;
    r.mscale = rc.attn_factor;
    out->rerotation = r;
    out->rerotation.mscale = 1.0f;
    out->rerotation.cos_sin_table = nullptr;
    out->rerotation.table_positions = 0;
}

Status Model::forward(const ForwardBatch& batch, backend::KvMemory& kv, std::vector<float>* logits) {
    const kv::KvShape& shape = kv.shape();
    if (shape.num_layers != config_.num_layers || shape.num_kv_heads != config_.num_kv_heads ||
        shape.head_dim != config_.head_dim) {
        return internal_error("KV storage shape does not match the model");
    }
    LA_RETURN_IF_ERROR(batch.validate(shape.num_blocks, shape.block_size, config_.vocab_size));
    const int32_t n = batch.num_rows();
    if (n == 0) {  // copies only
        for (int32_t l = 0; l < config_.num_layers; ++l) run_kv_copies(l, batch, kv);
        backend_->synchronize();
        logits->clear();
        return {};
    }
    const int64_t hidden = config_.hidden_dim;
    const int64_t q_dim = config_.q_dim(), kv_dim = config_.kv_dim();
    x_.resize(n * hidden);
    h_.resize(n * std::max({hidden, int64_t(config_.ffn_dim), q_dim}));
    q_.resize(n * q_dim);
    attn_.resize(n * q_dim);
    k_.resize(n * kv_dim);
    v_.resize(n * kv_dim);
    gate_.resize(n * config_.ffn_dim);
    up_.resize(n * config_.ffn_dim);

    const Linear& embd = weights_.token_embd;
    backend_->embedding_lookup(
        {embd.data(), embd.type, hidden, batch.token_ids.data(), n, config_.embedding_scale, x_.data()});
    for (int32_t l = 0; l < config_.num_layers; ++l) run_layer(l, batch, kv, n);

    // Final norm and LM head, only for the rows whose logits are wanted.
    const int64_t num_out = int64_t(batch.logit_rows.size());
    gathered_.resize(num_out * hidden);
    normed_.resize(num_out * hidden);
    for (int64_t i = 0; i < num_out; ++i) {
        std::memcpy(gathered_.data() + i * hidden, x_.data() + int64_t(batch.logit_rows[i]) * hidden,
                    sizeof(float) * hidden);
    }
    backend_->rmsnorm(gathered_.data(), weights_.output_norm.data(), normed_.data(), num_out, hidden, config_.norm_eps);
    logits->resize(num_out * config_.vocab_size);
    if (num_out > 0) {
        backend_->matmul(weights_.output().params(normed_.data(), logits->data(), num_out));
    }
    backend_->synchronize();
    if (const float cap = config_.final_logit_softcap; cap > 0.0f) {
        for (float& v : *logits) v = cap * std::tanh(v / cap);
    }
    return {};
}

void Model::run_kv_copies(int32_t layer, const ForwardBatch& batch, backend::KvMemory& kv) {
    for (const KvBlockCopy& c : batch.kv_copies) {
        backend_->kv_copy_rotate(kv, layer,
                                 {c.src_blocks.data(), c.dst_blocks.data(), c.num_tokens, c.delta, rerotation_rope(layer)});
    }
}

void Model::run_layer(int32_t layer, const ForwardBatch& batch, backend::KvMemory& kv, int32_t n) {
    run_attention(layer, batch, kv, n);
    run_ffn(layer, n);
}

// x += [post_norm](W_o attention(rope(norm_q(W_q h)), rope(norm_k(W_k h)), W_v h)), h = norm(x).
void Model::run_attention(int32_t layer, const ForwardBatch& batch, backend::KvMemory& kv, int32_t n) {
    const LayerWeights& w = weights_.layers[layer];
    const ModelConfig& c = config_;
    const int64_t hidden = c.hidden_dim;
    const kernels::RopeParams& rope = this->rope(layer);
    backend::Backend& be = *backend_;

    be.rmsnorm(x_.data(), w.attn_norm.data(), h_.data(), n, hidden, c.norm_eps);
    const kernels::MatmulParams qkv[] = {w.wq.params(h_.data(), q_.data(), n), w.wk.params(h_.data(), k_.data(), n),
                                         w.wv.params(h_.data(), v_.data(), n)};
    be.matmuls(qkv, 3);
    if (!w.q_norm.empty()) {  // one RMSNorm per head: rows of head_dim
        be.rmsnorm(q_.data(), w.q_norm.data(), q_.data(), int64_t(n) * c.num_heads, c.head_dim, c.norm_eps);
        be.rmsnorm(k_.data(), w.k_norm.data(), k_.data(), int64_t(n) * c.num_kv_heads, c.head_dim, c.norm_eps);
    }
    if (batch.keys_rotated) {
        be.rope_apply({k_.data(), batch.store_positions.data(), n, c.num_kv_heads, c.head_dim, rope});
    }
    run_kv_copies(layer, batch, kv);  // before this layer's rows are stored: they may reuse a copy's source
    be.kv_store(kv, layer, k_.data(), v_.data(), batch.slot_mapping.data(), n);

    kernels::AttentionParams ap{};
    ap.q = q_.data();
    ap.q_pos = batch.positions.data();
    ap.out = attn_.data();
    ap.k_cache = kv.k(layer);
    ap.v_cache = kv.v(layer);
    ap.kv_dtype = kv.shape().dtype;
    ap.block_ids = batch.block_ids.data();
    ap.spans = batch.spans.data();
    ap.seqs = batch.seqs.data();
    ap.num_seqs = int32_t(batch.seqs.size());
    ap.num_heads = c.num_heads;
    ap.num_kv_heads = c.num_kv_heads;
    ap.head_dim = c.head_dim;
    ap.block_size = kv.shape().block_size;
    ap.scale = c.attention_scale;
    ap.rope = rope;
    ap.keys_rotated = batch.keys_rotated;
    ap.sliding_window = c.is_sliding(layer) ? c.sliding_window : 0;
    be.attention(ap);

    be.matmul(w.wo.params(attn_.data(), h_.data(), n));
    if (!w.attn_post_norm.empty()) {
        be.rmsnorm(h_.data(), w.attn_post_norm.data(), h_.data(), n, hidden, c.norm_eps);
    }
    be.add_inplace(x_.data(), h_.data(), int64_t(n) * hidden);
}

// x += [post_norm](W_down act(W_gate h) * W_up h), h = norm(x).
void Model::run_ffn(int32_t layer, int32_t n) {
    const LayerWeights& w = weights_.layers[layer];
    const ModelConfig& c = config_;
    const int64_t hidden = c.hidden_dim;
    backend::Backend& be = *backend_;

    be.rmsnorm(x_.data(), w.ffn_norm.data(), h_.data(), n, hidden, c.norm_eps);
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
        be.rmsnorm(h_.data(), w.ffn_post_norm.data(), h_.data(), n, hidden, c.norm_eps);
    }
    be.add_inplace(x_.data(), h_.data(), int64_t(n) * hidden);
}

}  // namespace lazyattn::model
