#include "engine/runner/model_runner.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <future>
#include <span>

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
    : model_(model),
      rules_{config.block_size, keys_stored_rotated(config.cache_mode), config.query_mass_layers},
      kv_memory_(allocate_pool(model, config, &status_)) {}

Sampler& ModelRunner::sampler_of(SequenceState& s) {
    if (!s.sampler) s.sampler = std::make_unique<Sampler>(s.request.sampling);
    return *s.sampler;
}

bool ModelRunner::device_sample_rows(const SchedulerOutput& step) {
    // Every row with logits must be one the device can pick from the logits (or unused): one
    // row per tail, its request changing the logits by its grammar's mask alone and asking for
    // no logprobs.
    std::vector<const PhaseChunk*> tails;
    for (const PhaseChunk& t : step.chunks) {
        if (t.kind != PhaseKind::kTail) continue;
        if (t.all_logits || (t.sample && !t.seq->request.sampling.device_samplable())) return false;
        tails.push_back(&t);
    }
    if (tails.empty()) return false;
    sample_rows_.assign(tails.size(), backend::SampleRow{});  // unused rows: greedy, no draw
    for (size_t i = 0; i < tails.size(); ++i) {
        if (!tails[i]->sample) continue;
        const SamplingParams& p = tails[i]->seq->request.sampling;
        sample_rows_[i].temperature = p.temperature;
        sample_rows_[i].top_k = p.top_k;
        sample_rows_[i].top_p = p.top_p;
        if (p.constraint) {
            // Where the helper thread writes this step's mask (run(): ready before the sampling).
            const std::span<const int32_t> mask = sampler_of(*tails[i]->seq).constraint_bitmask();
            sample_rows_[i].bitmask = mask.data();
            sample_rows_[i].bitmask_words = int32_t(mask.size());
        }
    }
    if (!model_.samples_on_device(sample_rows_)) return false;
    // Decided: only now are the draws taken, so a step sampled on the host draws them itself and
    // each sampler's sequence of draws is the same on either side.
    for (size_t i = 0; i < tails.size(); ++i) {
        if (sample_rows_[i].temperature > 0.0f) sample_rows_[i].uniform = sampler_of(*tails[i]->seq).next_uniform();
    }
    return true;
}

ModelRunnerOutput ModelRunner::run(const SchedulerOutput& step) {
    ModelRunnerOutput out;
    out.chunks.resize(step.chunks.size());
    const StepInputs in = build_step_inputs(step, rules_);
    const bool on_device = device_sample_rows(step);
    std::vector<float> key_mass;
    std::vector<std::vector<float>> apart(in.apart.size());
    // Structured output: the grammar masks of this step's constrained rows are computed on a
    // helper thread while the forward runs (each matcher's state is final: its last token was
    // accepted in the previous step's update); sample() then only applies them.
    std::vector<Sampler*> constrained;
    for (const PhaseChunk& t : step.chunks) {
        if (t.kind == PhaseKind::kTail && t.sample && t.seq->request.sampling.constraint) {
            constrained.push_back(&sampler_of(*t.seq));
        }
    }
    std::future<void> masks;
    if (!constrained.empty()) {
        masks = std::async(std::launch::async, [&constrained] {
            for (Sampler* s : constrained) s->prepare_constraint();
        });
    }
    // Waited for where the device samples (the rows' bitmasks are uploaded then), else after the
    // forward, before the host samples; a second call does nothing.
    const std::function<void()> masks_ready = [&masks] {
        if (masks.valid()) masks.get();
    };
    const double t0 = now_ms();
    const Status st = model_.forward(in.batch, *kv_memory_, &logits_, on_device ? &sample_rows_ : nullptr,
                                     &device_tokens_, in.batch.mass_seqs.empty() ? nullptr : &key_mass, masks_ready);
    masks_ready();
    LA_CHECK_MSG(st.ok(), "forward failed on a validated plan: %s", st.to_string().c_str());
    for (size_t k = 0; k < in.apart.size(); ++k) {  // the phase kinds whose rows run apart
        if (in.apart[k].num_rows() == 0) continue;
        const PhaseKindRow& kind = phase_kind(PhaseKind{uint8_t(k)});
        const Status ms = kind.measure(model_, in.apart[k], *kv_memory_, &apart[k]);
        LA_CHECK_MSG(ms.ok(), "%s rows failed on a validated plan: %s", kind.name, ms.to_string().c_str());
    }
    out.forward_ms = now_ms() - t0;
    split_measurements(in, step, key_mass, apart, out.chunks);

    const int32_t vocab = model_.config().vocab_size;
    size_t row = 0, tail = 0;  // logit rows and tails come in the order of the tail chunks
    if (on_device) {
        // The rows' draws were taken from their samplers already: the device must have used them.
        LA_CHECK(device_tokens_.size() == sample_rows_.size());
        ++num_device_sampled_steps_;
    }
    for (size_t i = 0; i < step.chunks.size(); ++i) {
        const PhaseChunk& t = step.chunks[i];
        if (t.kind != PhaseKind::kTail) continue;
        ChunkResult& r = out.chunks[i];
        if (on_device) {
            r.num_logit_rows = 1;
            // A constrained row's token goes to its grammar, as the host sampler's own would.
            if (t.sample) {
                r.token = t.seq->request.sampling.constraint ? sampler_of(*t.seq).accept_sampled(device_tokens_[tail])
                                                             : device_tokens_[tail];
            }
            ++tail;
            continue;
        }
        r.num_logit_rows = t.all_logits ? t.rows() : 1;
        r.logits = logits_.data() + row * vocab;
        row += size_t(r.num_logit_rows);
        SequenceState& s = *t.seq;
        if (t.all_logits && t.prompt_logprobs >= 0) {
            const auto& prompt = s.request.tail;
            for (int32_t j = t.begin; j < t.end; ++j) {
                const int32_t k = j + 1 - t.prompt_offset;  // the request.tail token row j predicts
                if (k < 0 || k >= int32_t(prompt.size())) continue;
                r.prompt_logprobs.emplace_back(
                    k, token_logprobs(r.logits + size_t(j - t.begin) * vocab, vocab, prompt[k], t.prompt_logprobs));
            }
        }
        if (!t.sample) continue;
        const float* last = r.logits + size_t(r.num_logit_rows - 1) * vocab;
        r.has_logprobs = s.request.sampling.logprobs >= 0;
        const size_t num_prompt = s.history.size() - size_t(s.num_generated);
        r.token = sampler_of(s).sample(last, vocab, s.history, num_prompt, r.has_logprobs ? &r.logprobs : nullptr);
    }
    return out;
}

}  // namespace lazyattn::engine
