// llama-server's native generation routes, POST /completion and POST /completions: the body
// parsed by parse_native_request (native_request.h), each prompt answered by answer_generation
// through a NativeRenderer (native_renderer.h). One prompt: its object, or its stream. A list of
// prompts: their objects in a JSON array, answered one after another (each is a generation of
// its own; a failure answers that prompt's error for the whole request, as llama-server does).
#pragma once

#include "http/http_message.h"
#include "server/server_context.h"

namespace lazyattn::server {

void handle_native_completion(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                              const http::ClientLink& link);

}  // namespace lazyattn::server
