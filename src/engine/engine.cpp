#include "engine/engine.h"

namespace lazyattn::engine {

Expected<RagResult> Engine::run(const RagRequest& request, const TextCallback& on_text) {
    RequestHandle::Callback callback;
    if (on_text) {
        callback = [&on_text](const RequestEvent& e) {
            if (e.kind == RequestEvent::Kind::kToken && !e.text.empty()) on_text(e.text);
        };
    }
    LA_ASSIGN_OR_RETURN(auto handle, scheduler_.add(request, callback));
    while (!handle->finished()) scheduler_.step();
    RagResult result = handle->wait();
    if (result.finish_reason == "error") return result.status;
    return result;
}

Expected<std::vector<float>> Engine::tail_logits(const RagRequest& request) {
    RagRequest r = request;
    r.max_tokens = 0;
    LA_ASSIGN_OR_RETURN(auto handle, scheduler_.add(std::move(r), {}, true));
    while (!handle->finished()) scheduler_.step();
    const RagResult result = handle->wait();
    if (result.finish_reason == "error") return result.status;
    return handle->tail_logits();
}

}  // namespace lazyattn::engine
