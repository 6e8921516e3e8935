// Pinning a batch of documents, all or none: the one rule behind POST /v1/documents and the
// Python API's pin() and precompute(), so both check, tokenize and undo alike.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/serving_engine.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/request_builder.h"

namespace lazyattn::server {

// Pins `docs` in `tenant`, in order, and appends what the engine says of each to `pinned`.
// Every document is checked against the context and tokenized before the first pin (text whose
// bytes alone prove it too long is refused untokenized), and a pin that fails unpins the batch's
// earlier ones, so a failure leaves `pinned` empty and the registry as it was. The documents are
// noted as known (documents_from known) once all of them passed the checks. The error names
// documents[i]; a refusal for room (the pinned share of the pool, or the tenant's quota) is a
// 429 pin_quota_exceeded the caller may retry after unpinning.
std::optional<ApiError> pin_document_batch(const RequestBuilder& builder, engine::ServingEngine& engine,
                                           const std::vector<DocumentRef>& docs, const std::string& tenant,
                                           std::vector<engine::DocumentInfo>& pinned);

}  // namespace lazyattn::server
