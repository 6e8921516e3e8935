// The request fields that choose a request's documents and how it reads them, parsed for
// parse_generation_request (server/openai_request.h declares the ones other parsers call too:
// parse_cache_salt, check_cache_salt, parse_documents).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>

#include "engine/request/document_reuse.h"
#include "server/api_error.h"
#include "server/openai_request.h"

namespace lazyattn::server {

// `document_reuse`: the string form ("anchor+recompute=15%@query") or the object form; a 400
// names the field under document_reuse. Absent: `out` untouched (the server's default).
std::optional<ApiError> parse_document_reuse_field(const nlohmann::json& body,
                                                   std::optional<engine::DocumentReuse>& out);

// `documents_from` and `document_delimiter` into out.documents_* (absent: the server's setting).
std::optional<ApiError> parse_documents_from(const nlohmann::json& body, GenerationRequest& out);

}  // namespace lazyattn::server
