#include "engine/runner/model_runner.h"

#include <algorithm>
#include <climits>

#include "core/check.h"
#include "core/timer.h"
#include "engine/sequence/sequence_state.h"

namespace lazyattn::engine {

kv::KvShape kv_shape_for(const model::ModelConfig& model, int32_t block_size, int64_t pool_bytes,
                         kernels::KvTypes types) {
    kv::KvShape shape;
    shape.set_types(types);
    shape.num_layers = model.num_layers;
    shape.num_kv_heads = model.num_kv_heads;
    shape.head_dim = model.head_dim;
    shape.block_size = block_size;
    // Clamped: a pool too large for the block ids is refused when allocated, not wrapped around.
    shape.num_blocks = int32_t(std::clamp<int64_t>(pool_bytes / shape.bytes_per_block(), 1, INT32_MAX));
    return shape;
}

namespace {

std::unique_ptr<backend::KvMemory> allocate_pool(model::Model& model, const EngineConfig& config, Status* status) {
    kv::KvShape shape =
        kv_shape_for(model.config(), config.block_size, int64_t(config.kv_cache_mb) << 20, config.kv_types);
    if (config.kv_num_blocks > 0) shape.num_blocks = config.kv_num_blocks;
    auto memory = model.backend().allocate_kv(shape);
    if (memory.ok()) return std::move(memory).value();
    *status = memory.status();
    // An empty stand-in: no block is ever handed out (every request gets *status), so nothing
    // reads it. It is built directly, not by the backend, whose allocate_kv may refuse this
    // shape's very types (a q8_0 pool on a head_dim the groups do not divide, non-bf16 on CUDA).
    shape.num_blocks = 0;
    return std::make_unique<backend::HostKvMemory>(shape);
}

}  // namespace

ModelRunner::ModelRunner(model::Model& model, const EngineConfig& config)
    : model_(model), kv_memory_(allocate_pool(model, config, &status_)) {}

bool ModelRunner::device_sample_rows(const SchedulerOutput& step) {
    // Every row with logits must be one the device can pick from the raw logits (or unused): one
    // row per tail, its request neither changing the logits nor asking for logprobs.
    if (step.tails.empty()) return false;
    for (const TailChunk& t : step.tails) {
        if (t.all_logits || (t.sample && !t.seq->request.sampling.samples_raw_logits())) return false;
    }
    sample_rows_.assign(step.tails.size(), backend::SampleRow{});  // unused rows: greedy, no draw
    for (size_t i = 0; i < step.tails.size(); ++i) {
        if (!step.tails[i].sample) continue;
        const SamplingParams& p = step.tails[i].seq->request.sampling;
        sample_rows_[i].temperature = p.temperature;
        sample_rows_[i].top_k = p.top_k;
        sample_rows_[i].top_p = p.top_p;
    }
    if (!model_.samples_on_device(sample_rows_)) return false;
    // Decided: only now are the draws taken, so a step sampled on the host draws them itself and
    // each sampler's sequence of draws is the same on either side.
    for (size_t i = 0; i < step.tails.size(); ++i) {
        if (sample_rows_[i].temperature > 0.0f) sample_rows_[i].uniform = step.tails[i].seq->sampler->next_uniform();
    }
    return true;
}

ModelRunnerOutput ModelRunner::run(const SchedulerOutput& step) {
    ModelRunnerOutput out;
    const bool on_device = device_sample_rows(step);
    const double t0 = now_ms();
    const Status st = model_.forward(step.batch, *kv_memory_, &logits_, on_device ? &sample_rows_ : nullptr,
                                     &device_tokens_, step.probes.empty() ? nullptr : &out.key_mass);
    LA_CHECK_MSG(st.ok(), "forward failed on a validated plan: %s", st.to_string().c_str());
    if (step.measure.num_rows() > 0) {
        const Status ms = model_.measure_kv_deviation(step.measure, *kv_memory_, &out.kv_deviation);
        LA_CHECK_MSG(ms.ok(), "KV deviation failed on a validated plan: %s", ms.to_string().c_str());
    }
    out.forward_ms = now_ms() - t0;
    if (on_device) {
        // The rows' draws were taken from their samplers already: the device must have used them.
        LA_CHECK(device_tokens_.size() == step.tails.size());
        ++num_device_sampled_steps_;
        out.tails.resize(step.tails.size());
        for (size_t i = 0; i < step.tails.size(); ++i) {
            out.tails[i].num_logit_rows = 1;
            if (step.tails[i].sample) out.tails[i].token = device_tokens_[i];
        }
        return out;
    }

    const int32_t vocab = model_.config().vocab_size;
    size_t row = 0;
    out.tails.resize(step.tails.size());
    for (size_t i = 0; i < step.tails.size(); ++i) {
        const TailChunk& t = step.tails[i];
        TailResult& r = out.tails[i];
        r.num_logit_rows = t.all_logits ? t.end - t.begin : 1;
        r.logits = logits_.data() + row * vocab;
        row += size_t(r.num_logit_rows);
        const SequenceState& s = *t.seq;
        if (t.all_logits && t.prompt_logprobs >= 0) {
            const auto& tail = s.request.tail;
            for (int32_t j = t.begin; j < t.end; ++j) {
                const int32_t k = j + 1 - t.prompt_offset;  // the request.tail token row j predicts
                if (k < 0 || k >= int32_t(tail.size())) continue;
                r.prompt_logprobs.emplace_back(
                    k, token_logprobs(r.logits + size_t(j - t.begin) * vocab, vocab, tail[k], t.prompt_logprobs));
            }
        }
        if (!t.sample) continue;
        const float* last = r.logits + size_t(r.num_logit_rows - 1) * vocab;
        r.has_logprobs = s.request.sampling.logprobs >= 0;
        const size_t num_prompt = s.history.size() - size_t(s.num_generated);
        r.token = s.sampler->sample(last, vocab, s.history, num_prompt, r.has_logprobs ? &r.logprobs : nullptr);
    }
    return out;
}

}  // namespace lazyattn::engine
