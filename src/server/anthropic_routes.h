// POST /v1/messages (Anthropic Messages: a whole message or its event stream) and POST
// /v1/messages/count_tokens (the prompt's token count for the same body, nothing generated).
// The body is read by anthropic_request.h, answered through the serving front
// (answer_generation) with AnthropicRenderer, and every error is in Anthropic's shape.
#pragma once

#include "http/http_message.h"
#include "server/server_context.h"

namespace lazyattn::server {

void handle_messages(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                     const http::ClientLink& link);
void handle_count_tokens(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                         const http::ClientLink& link);

}  // namespace lazyattn::server
