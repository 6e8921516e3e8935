// The document registry over HTTP: POST /v1/documents computes (if needed) and pins documents,
// GET /v1/documents lists what the cache holds, DELETE /v1/documents/{id} unpins. Ids are the
// engine's content hashes, so the same text always has the same id, and a request may name a
// cached document by id alone. Documents are tokenized exactly as generation requests tokenize
// their `documents`, so pinned documents are hits for both.
#pragma once

#include <httplib.h>

#include "server/server_context.h"

namespace lazyattn::server {

void handle_pin_documents(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_list_documents(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_unpin_document(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace lazyattn::server
