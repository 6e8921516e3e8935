// POST /v1/completions and POST /v1/chat/completions: parse and check the body, build the
// RagRequest (tokenizing on this HTTP worker), submit it, then answer with one JSON body or a
// stream. A request the engine refuses, or that fails before its first token, gets an error
// status; once a stream has started, errors travel inside it.
#pragma once

#include <httplib.h>

#include "server/server_context.h"

namespace lazyattn::server {

void handle_completion(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, bool chat);

}  // namespace lazyattn::server
