// POST /tokenize and POST /detokenize in both shapes clients already use:
//   llama.cpp: {"content", "add_special", "with_pieces"} -> {"tokens"} (with_pieces: [{"id", "piece"}]);
//              {"tokens"} -> {"content"}
//   vLLM:      {"prompt" | "messages", "add_special_tokens", "add_generation_prompt"} ->
//              {"tokens", "count", "max_model_len"}; {"tokens"} -> {"prompt"}
// Answers carry both spellings ("content" and "prompt", "count" and "max_model_len"), so either
// client reads its own. Text is tokenized exactly as completions tokenize a prompt.
#pragma once

#include "http/http_message.h"
#include "server/server_context.h"

namespace lazyattn::server {

void handle_tokenize(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res);
void handle_detokenize(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res);

}  // namespace lazyattn::server
