// POST /v1/responses (and /responses, as llama-server serves it): the OpenAI Responses API over
// the serving front. The body is parsed into a GenerationRequest (responses_request.h), answered
// by answer_generation with a ResponsesRenderer (whole `response` object or its named events).
// Responses are not stored: GET and DELETE /v1/responses/{id} answer 404 saying so, as does a
// request naming previous_response_id (a 400).
#pragma once

#include "http/http_message.h"
#include "server/server_context.h"

namespace lazyattn::server {

void handle_responses(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                      const http::ClientLink& link);
// GET, DELETE /v1/responses/{id} (and .../input_items, .../cancel): nothing is kept to find.
void handle_stored_response(http::HttpResponse& res);

}  // namespace lazyattn::server
