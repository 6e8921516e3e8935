// answer_generation: one generation request of any API, from its checked GenerationRequest to the
// last byte: the front prepares and queues it (serving_front.h), then either every choice is
// waited for and one body written, or the events are streamed; both through the API's renderer
// (api_renderer.h). Owned here, once for every API: the 200 that waits for the first events (so
// a request the engine refuses after taking it still gets its status), polling for a client that
// left (its choices cancelled), metrics, the access-log fields and errors in the API's shape.
#pragma once

#include <memory>

#include "http/http_message.h"
#include "server/api_renderer.h"
#include "server/openai_request.h"
#include "server/server_context.h"

namespace lazyattn::server {

void answer_generation(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                       const http::ClientLink& link, GenerationRequest gen, std::shared_ptr<ApiRenderer> renderer);

// An error in the renderer's shape, with its HTTP status (and Retry-After for a 429).
void send_api_error(http::HttpResponse& res, const ApiError& error, const ApiRenderer& renderer);

}  // namespace lazyattn::server
