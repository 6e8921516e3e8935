#include "engine/sync_engine.h"

namespace lazyattn::engine {
namespace {

// Steps until the request finishes. With one caller nothing outside can unblock a step that
// moved nothing, so such a step ends the run with an error instead of looping forever.
Status run_to_end(EngineCore& core, RequestHandle& handle) {
    while (!handle.finished()) {
        if (core.step() || handle.finished()) continue;
        handle.cancel();
        core.step();  // reaps it
        return internal_error("the scheduler could not make progress on the request");
    }
    return {};
}

}  // namespace

Expected<std::unique_ptr<SyncEngine>> SyncEngine::create(model::Model& model, const tokenizer::Tokenizer& tokenizer,
                                                         const EngineConfig& config) {
    LA_RETURN_IF_ERROR(config.validate());
    auto engine = std::make_unique<SyncEngine>(model, tokenizer, config);
    LA_RETURN_IF_ERROR(engine->status());
    return engine;
}

Expected<RagResult> SyncEngine::run(const RagRequest& request, const TextCallback& on_text) {
    RequestHandle::Callback callback;
    if (on_text) {
        callback = [&on_text](const RequestEvent& e) {
            if (e.kind == RequestEvent::Kind::kToken && !e.text.empty()) on_text(e.text);
        };
    }
    LA_ASSIGN_OR_RETURN(auto handle, core_.add(request, callback));
    LA_RETURN_IF_ERROR(run_to_end(core_, *handle));
    RagResult result = handle->wait();
    if (result.finish_reason == FinishReason::kError) return result.status;
    return result;
}

int64_t SyncEngine::run_background() {
    int64_t steps = 0;
    while (core_.scheduler().has_background_work() && core_.step()) ++steps;
    return steps;
}

Expected<std::vector<float>> SyncEngine::tail_logits(const RagRequest& request) {
    RagRequest r = request;
    r.max_tokens = 0;
    LA_ASSIGN_OR_RETURN(auto handle, core_.add(std::move(r), {}, true));
    LA_RETURN_IF_ERROR(run_to_end(core_, *handle));
    const RagResult result = handle->wait();
    if (result.finish_reason == FinishReason::kError) return result.status;
    return handle->tail_logits();
}

}  // namespace lazyattn::engine
