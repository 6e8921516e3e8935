// llama-server's read-only introspection routes. GET /props: the defaults a /completion request
// runs with (default_generation_settings), total_slots (--parallel: the requests the engine runs
// at once), model_path, chat_template, build_info, modalities. GET /slots: one entry per slot,
// is_processing for as many as the engine runs now (it has no slots of its own: requests are
// admitted by KV blocks, so a slot here is one of the max_num_seqs places); 501 with --no-slots,
// as llama-server. POST /props stays a 501 (settings are command-line options).
#pragma once

#include "http/http_message.h"
#include "server/server_context.h"

namespace lazyattn::server {

void handle_props(ServerContext& ctx, http::HttpResponse& res);
void handle_slots(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res);

}  // namespace lazyattn::server
