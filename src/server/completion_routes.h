// POST /v1/completions and POST /v1/chat/completions: parse and check the body, build the
// RagRequest (tokenizing on this HTTP worker), submit it, then answer with one JSON body or a
// stream. A request the engine refuses, or that fails before its first token, gets an error
// status; once a stream has started, errors travel inside it. A client that leaves, streamed or
// not, cancels its request.
#pragma once

#include "http/http_message.h"
#include "server/server_context.h"

namespace lazyattn::server {

void handle_completion(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                       const http::ClientLink& link, bool chat);

}  // namespace lazyattn::server
