// ModelRunner: runs what the Scheduler planned (vLLM v1's GPUModelRunner). It owns the KV pool's
// memory (allocated by the model's backend), the step's input layout (input_builder.h), the
// logits and the forward call, the requests' samplers, and turns the logits into one sampled
// token (with logprobs when asked) per sampling row and the prompt logprobs of prompt rows. It
// decides nothing: which rows run, and what a token means for its request, are the Scheduler's
// and the OutputProcessor's.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/kv_memory.h"
#include "core/status.h"
#include "engine/engine_config.h"
#include "engine/runner/input_builder.h"
#include "engine/scheduler_output.h"
#include "engine/sequence/sampler.h"
#include "model/model.h"

namespace lazyattn::engine {

class ModelRunner {
public:
    // Allocates the pool EngineConfig asks for (kv_num_blocks, else kv_cache_mb). When it cannot
    // be had, status() says why and the pool is empty (every request is then refused with that
    // status instead of the process dying of bad_alloc).
    ModelRunner(model::Model& model, const EngineConfig& config);
    const Status& status() const { return status_; }

    // Runs the step's forward (block-attn copies first, inside it) and samples. Dies on a forward
    // error: the plan was validated by construction, so an error is a bug, not bad input.
    ModelRunnerOutput run(const SchedulerOutput& step);

    backend::KvMemory& kv_memory() { return *kv_memory_; }
    // Steps whose tokens the backend sampled where the logits live (no logits downloaded).
    int64_t num_device_sampled_steps() const { return num_device_sampled_steps_; }
    model::Model& model() { return model_; }

private:
    // Whether this step's tokens are sampled on the device; when so, sample_rows_ holds one row
    // per chunk (only the tails' are used) with the draws taken from the requests' samplers.
    bool device_sample_rows(const SchedulerOutput& step);
    // The request's sampler, made on its first sampled token (seeded by its SamplingParams).
    static Sampler& sampler_of(SequenceState& s);

    model::Model& model_;
    LayoutRules rules_;
    Status status_;
    std::unique_ptr<backend::KvMemory> kv_memory_;  // never null
    std::vector<float> logits_;                     // reused across steps
    std::vector<backend::SampleRow> sample_rows_;   // one per logit row, when sampled on the device
    std::vector<int32_t> device_tokens_;            // their tokens
    int64_t num_device_sampled_steps_ = 0;
};

}  // namespace lazyattn::engine
