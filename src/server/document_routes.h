// The document registry over HTTP: POST /v1/documents computes (if needed) and pins documents,
// GET /v1/documents lists the caller's cached documents, DELETE /v1/documents/{id} drops one of
// the caller's pins. Everything is scoped to the caller's tenant (API key and cache_salt): ids
// are keyed content hashes of that tenant, so another tenant can neither list, use nor unpin
// them. Documents are tokenized exactly as generation requests tokenize their `documents`, so
// pinned documents are hits for both.
#pragma once

#include "http/http_message.h"
#include "server/server_context.h"

namespace lazyattn::server {

// A client that leaves before the answer cancels the batch and undoes its pins.
void handle_pin_documents(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res,
                          const http::ClientLink& link);
void handle_list_documents(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res);
void handle_unpin_document(ServerContext& ctx, const http::HttpRequest& req, http::HttpResponse& res);

}  // namespace lazyattn::server
