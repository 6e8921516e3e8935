// POST /apply-template (llama-server's): a chat request's messages rendered by the model's chat
// template, as the generation routes render them (add_generation_prompt,
// continue_final_message, chat_template_kwargs), returned as {"prompt"} without generating.
// The same bounds as a chat completion: messages that cannot fit the context are refused before
// rendering.
#pragma once

#include "http/http_message.h"
#include "server/server_context.h"

namespace lazyattn::server {

void handle_apply_template(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res);

}  // namespace lazyattn::server
