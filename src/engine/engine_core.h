// EngineCore: one step as schedule -> run -> update (vLLM v1's EngineCore). It owns the three
// parts: the Scheduler (policy: what runs), the ModelRunner (the KV pool's memory, the forward,
// sampling) and the OutputProcessor (what a token means: text, stop strings, finish reasons);
// and the persistent store below the pool (--kv-store: KvStoreAdapter), which it opens once.
// Both faces of the engine step through it: SyncEngine (one caller, synchronous) and ServingEngine
// (its inference thread). Single-threaded, as the Scheduler.
#pragma once

#include <memory>

#include "core/status.h"
#include "engine/engine_config.h"
#include "engine/output/output_processor.h"
#include "engine/output/prefill_progress.h"
#include "engine/runner/model_runner.h"
#include "engine/scheduler/scheduler.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::engine {

// What the Scheduler is told of `model`.
ModelFacts model_facts(const model::Model& model);

// The update half of a step: the runner's results applied, each sampled token given to the
// OutputProcessor, and the requests it ends finished.
void apply_step(Scheduler& scheduler, OutputProcessor& outputs, const SchedulerOutput& out, ModelRunnerOutput& ran);
// apply_step's second half: `tokens` (Scheduler::update's) given to the OutputProcessor.
void finish_tokens(Scheduler& scheduler, OutputProcessor& outputs, const std::vector<StepToken>& tokens);

class EngineCore {
public:
    // Never throws: a KV pool that cannot be allocated (or a store that cannot be opened) leaves
    // status() not ok, and every request is refused with it. The store's tiers are opened here,
    // each once, and asked for one key (EngineConfig::kv_store_unreachable).
    EngineCore(model::Model& model, const tokenizer::Tokenizer& tokenizer, const EngineConfig& config);
    const Status& status() const { return runner_.status().ok() ? store_status_ : runner_.status(); }

    // Checks and queues a request (a default max_tokens fitted first). Refused (never queued)
    // when it is malformed, longer than the context, larger than the pool's unpinned blocks, or
    // the queue is full.
    Expected<std::shared_ptr<RequestHandle>> add(RagRequest request, RequestHandle::Callback callback = {},
                                                 bool want_all_tail_logits = false);
    // Queues a request already checked (check_request()) under a caller-made handle, as
    // Scheduler::enqueue; its prompt progress is reported when it asks (report_progress).
    // Engine thread only.
    Status enqueue(RagRequest request, std::shared_ptr<RequestHandle> handle, bool want_all_tail_logits = false);
    // add()'s checks, for a caller that makes its own handles (any thread).
    Status check_request(const RagRequest& request) const;
    // One step: true when it advanced any request (computed rows, or finished one), false when
    // nothing could move (no work, or only work that waits for something outside).
    bool step();
    bool idle() const { return scheduler_.idle(); }

    Scheduler& scheduler() { return scheduler_; }
    const Scheduler& scheduler() const { return scheduler_; }
    ModelRunner& runner() { return runner_; }
    // The persistent store (its store() null without --kv-store): flushing, lookups by key,
    // statistics. Engine thread only once steps run, as every part.
    KvStoreAdapter& kv_store() { return store_; }
    const EngineConfig& config() const { return scheduler_.config(); }

private:
    ModelRunner runner_;    // first: the pool the scheduler plans over
    KvStoreAdapter store_;  // on the runner's pool; the scheduler writes through it
    Status store_status_;
    Scheduler scheduler_;
    OutputProcessor outputs_;
    PrefillProgress progress_;  // the requests that asked for prompt progress
    uint64_t next_id_ = 1;
};

}  // namespace lazyattn::engine
