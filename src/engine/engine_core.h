// EngineCore: one step as schedule -> run -> update (vLLM v1's EngineCore). It owns the three
// parts: the Scheduler (policy: what runs), the ModelRunner (the KV pool's memory, the forward,
// sampling) and the OutputProcessor (what a token means: text, stop strings, finish reasons).
// Both faces of the engine step through it: SyncEngine (one caller, synchronous) and ServingEngine
// (its inference thread). Single-threaded, as the Scheduler.
#pragma once

#include <memory>

#include "core/status.h"
#include "engine/engine_config.h"
#include "engine/output/output_processor.h"
#include "engine/runner/model_runner.h"
#include "engine/scheduler/scheduler.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::engine {

// What the Scheduler is told of `model` (the weights' fingerprint only when config opens a store).
ModelFacts model_facts(const model::Model& model, const EngineConfig& config);

// The update half of a step: the runner's results applied, each sampled token given to the
// OutputProcessor, and the requests it ends finished.
void apply_step(Scheduler& scheduler, OutputProcessor& outputs, const SchedulerOutput& out, ModelRunnerOutput& ran);

class EngineCore {
public:
    // Never throws: a KV pool that cannot be allocated (or a store that cannot be opened) leaves
    // status() not ok, and every request is refused with it.
    EngineCore(model::Model& model, const tokenizer::Tokenizer& tokenizer, const EngineConfig& config);
    const Status& status() const { return runner_.status().ok() ? scheduler_.status() : runner_.status(); }

    // Checks and queues a request (a default max_tokens fitted first). Refused (never queued)
    // when it is malformed, longer than the context, larger than the pool's unpinned blocks, or
    // the queue is full.
    Expected<std::shared_ptr<RequestHandle>> add(RagRequest request, RequestHandle::Callback callback = {},
                                                 bool want_all_tail_logits = false);
    // add()'s checks, for a caller that makes its own handles (any thread).
    Status check_request(const RagRequest& request) const;
    // One step: true when it advanced any request (computed rows, or finished one), false when
    // nothing could move (no work, or only work that waits for something outside).
    bool step();
    bool idle() const { return scheduler_.idle(); }

    Scheduler& scheduler() { return scheduler_; }
    const Scheduler& scheduler() const { return scheduler_; }
    ModelRunner& runner() { return runner_; }
    const EngineConfig& config() const { return scheduler_.config(); }

private:
    ModelRunner runner_;  // first: the pool the scheduler plans over
    Scheduler scheduler_;
    OutputProcessor outputs_;
    uint64_t next_id_ = 1;
};

}  // namespace lazyattn::engine
