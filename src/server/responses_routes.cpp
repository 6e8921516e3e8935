#include "server/responses_routes.h"

#include "server/generation_answer.h"
#include "server/http_util.h"
#include "server/responses_renderer.h"
#include "server/responses_request.h"

namespace lazyattn::server {

void handle_responses(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                      const http::ClientLink& link) {
    nlohmann::json body;
    // A message's parts are its documents and the question: no list of them may be longer.
    if (auto e = parse_json_body(req, body, JsonBounds{int64_t(ctx.config.max_documents) + 1})) {
        return send_error(res, *e);
    }
    ResponsesRequest request;
    if (auto e = parse_responses_request(body, request)) return send_error(res, *e);
    body = nullptr;  // what was not moved into the request goes now, not after the generation
    auto renderer = std::make_shared<ResponsesRenderer>(std::move(request.echo), ctx.config.model_id);
    answer_generation(ctx, req, res, link, std::move(request.gen), std::move(renderer));
}

void handle_stored_response(http::HttpResponse& res) {
    send_error(res, ApiError{404, "responses are not stored by this server; send the conversation as input",
                             "invalid_request_error", "response_id", "not_found"});
}

}  // namespace lazyattn::server
