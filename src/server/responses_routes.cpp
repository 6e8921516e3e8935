#include "server/responses_routes.h"

#include "server/generation_answer.h"
#include "server/http_util.h"
#include "server/responses_renderer.h"
#include "server/responses_request.h"

namespace lazyattn::server {
namespace {

// The namespace of a caller's kept responses: its API key's (a cache_salt does not split it: a
// response id is unguessable, and a client continues a conversation with another salt).
std::string response_tenant(ServerContext& ctx, const http::HttpRequest& req) { return ctx.tenant(req, ""); }

ApiError not_kept(const std::string& id) {
    return ApiError{404,
                    "no response '" + clip_for_message(id) +
                        "' is kept here (store: false, deleted, evicted, or another API key's)",
                    "invalid_request_error", "response_id", "not_found"};
}

}  // namespace

std::shared_ptr<ResponseStore> make_response_store() {
    return std::make_shared<ResponseStore>(ResponseStore::Limits{});
}

void handle_responses(ServerContext& ctx, const std::shared_ptr<ResponseStore>& store, const http::HttpRequest& req,
                      http::HttpResponse& res, const http::ClientLink& link) {
    nlohmann::json body;
    // A message's parts are its documents and the question: no list of them may be longer.
    if (auto e = parse_json_body(req, body, JsonBounds{int64_t(ctx.config.max_documents) + 1})) {
        return send_error(res, *e);
    }
    apply_sampling_defaults(ctx.config.sampling_defaults, SamplingApi::kResponses, body);
    const std::string tenant = response_tenant(ctx, req);
    ResponsesRequest request;
    auto previous = [&](const std::string& id) -> std::optional<std::vector<tokenizer::ChatMessage>> {
        auto kept = store->get(tenant, id);
        if (!kept) return std::nullopt;
        return std::move(kept->conversation);
    };
    if (auto e = parse_responses_request(body, request, previous)) return send_error(res, *e);
    body = nullptr;  // what was not moved into the request goes now, not after the generation
    const bool keep = request.echo.store;
    auto renderer =
        std::make_shared<ResponsesRenderer>(std::move(request.echo), ctx.config.model_id, ctx.config.api_dialect);
    if (keep) {
        // What previous_response_id continues: this response's turns (not its instructions), then
        // its answer with the function calls it made (the next request's function_call_output
        // answers them). Kept once it finished (completed or incomplete); a failed one is not.
        const auto& messages = request.gen.messages;
        std::vector<tokenizer::ChatMessage> turns(messages.begin() + ptrdiff_t(request.instruction_messages),
                                                  messages.end());
        // The renderer calls on_done from its own methods, so it is alive then; a raw pointer
        // (not a shared_ptr, which would own itself through its callback).
        const ResponsesRenderer* answer = renderer.get();
        renderer->on_done([store, tenant, answer, turns = std::move(turns)](
                              const std::string& id, const std::string& answered, const std::string& text) mutable {
            StoredResponse kept{answered, std::move(turns)};
            tokenizer::ChatMessage reply{"assistant", text};
            for (const tool_calls::ToolCall& c : answer->calls())
                reply.tool_calls.push_back({c.id, c.name, c.arguments});
            kept.conversation.push_back(std::move(reply));
            store->put(tenant, id, std::move(kept));
        });
    }
    answer_generation(ctx, req, res, link, std::move(request.gen), std::move(renderer));
}

void handle_get_response(ServerContext& ctx, ResponseStore& store, const http::HttpRequest& req,
                         http::HttpResponse& res) {
    const std::string id = req.path_params.empty() ? "" : req.path_params[0];
    auto kept = store.get(response_tenant(ctx, req), id);
    if (!kept) return send_error(res, not_kept(id));
    res.status = 200;
    res.content_type = "application/json";
    res.body = std::move(kept->body);
}

void handle_delete_response(ServerContext& ctx, ResponseStore& store, const http::HttpRequest& req,
                            http::HttpResponse& res) {
    const std::string id = req.path_params.empty() ? "" : req.path_params[0];
    if (!store.erase(response_tenant(ctx, req), id)) return send_error(res, not_kept(id));
    send_json(res, 200, {{"id", id}, {"object", "response"}, {"deleted", true}});
}

}  // namespace lazyattn::server
