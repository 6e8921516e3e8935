// SyncEngine: the synchronous face of the EngineCore, for one caller on one thread (the CLI, the
// benchmark, tests): run() submits a request and steps until it is done; tail_logits() returns
// the logits at every tail position. ServingEngine is the multi-threaded face.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/engine_config.h"
#include "engine/engine_core.h"
#include "engine/request/rag_request.h"

namespace lazyattn::engine {

using TextCallback = std::function<void(std::string_view)>;

class SyncEngine {
public:
    // Never throws: a KV pool that cannot be allocated leaves status() not ok (and every run
    // refused with it). create() is the checked form.
    SyncEngine(model::Model& model, const tokenizer::Tokenizer& tokenizer, const EngineConfig& config)
        : core_(model, tokenizer, config) {}
    // kInvalidArgument for a bad config; kResourceExhausted naming the size when the KV pool
    // cannot be allocated.
    static Expected<std::unique_ptr<SyncEngine>> create(model::Model& model, const tokenizer::Tokenizer& tokenizer,
                                                        const EngineConfig& config);
    const Status& status() const { return core_.status(); }

    // Generates for one request, streaming text to on_text as it forms.
    Expected<RagResult> run(const RagRequest& request, const TextCallback& on_text = {});
    // Logits at every tail position of the prompt ([tail prompt rows, vocab]); nothing generated.
    // Every row is computed (cached tail blocks are not reused: they carry no logits).
    Expected<std::vector<float>> tail_logits(const RagRequest& request);

    EngineCore& core() { return core_; }
    // Steps while background work (conditioned copies, Scheduler::has_background_work) moves:
    // what a long-running server would have made by now. The steps taken.
    int64_t run_background();
    Scheduler& scheduler() { return core_.scheduler(); }
    const EngineConfig& config() const { return core_.config(); }
    const kv::KvCache& kv_cache() const { return core_.scheduler().kv().kv_cache(); }
    void check_integrity() const { core_.scheduler().check_integrity(); }

private:
    EngineCore core_;
};

}  // namespace lazyattn::engine
