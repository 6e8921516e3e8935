// POST /v1/responses (and /responses, as llama-server serves it): the OpenAI Responses API over
// the serving front. The body is parsed into a GenerationRequest (responses_request.h), answered
// by answer_generation with a ResponsesRenderer (whole `response` object or its named events).
// Finished responses with store: true (the default) are kept in a bounded ResponseStore of the
// caller's API key: GET /v1/responses/{id} answers one, DELETE drops it, previous_response_id
// continues its conversation.
#pragma once

#include <memory>

#include "http/http_message.h"
#include "server/response_store.h"
#include "server/server_context.h"

namespace lazyattn::server {

// The bounds of the kept responses: per API key, 256 responses and 16 MiB; 256 MiB in all.
std::shared_ptr<ResponseStore> make_response_store();

void handle_responses(ServerContext& ctx, const std::shared_ptr<ResponseStore>& store, const http::HttpRequest& req,
                      http::HttpResponse& res, const http::ClientLink& link);
void handle_get_response(ServerContext& ctx, ResponseStore& store, const http::HttpRequest& req,
                         http::HttpResponse& res);
void handle_delete_response(ServerContext& ctx, ResponseStore& store, const http::HttpRequest& req,
                            http::HttpResponse& res);

}  // namespace lazyattn::server
