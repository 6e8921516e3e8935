// Pinning (or only computing) a batch of documents: the one rule behind POST /v1/documents and the
// Python API's pin() and precompute(), so both check, tokenize and undo alike.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/serving_engine.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/request_builder.h"

namespace lazyattn::server {

// Whether the batch's documents stay pinned (pin) or are only computed and cached (precompute:
// ServingEngine::precompute, never pinned, so a batch larger than the pinned share of the pool
// still computes).
enum class PinMode { kKeep, kComputeOnly };

// Pins `docs` in `tenant`, in order, and appends what the engine says of each to `pinned`
// (under kComputeOnly, as the document stands after the call, unpinned unless pinned before).
// Every document is checked against the context and tokenized before the first pin (text whose
// bytes alone prove it too long is refused untokenized). A failure appends nothing to `pinned`;
// under kKeep it also unpins the batch's earlier documents, leaving the pins as they were, and
// under kComputeOnly the documents computed before it stay cached, unpinned (the error names
// `documents`: the batch is computed in engine requests of several documents). The documents are
// noted as known (documents_from known) once all of them passed the checks. The error names
// documents[i]; a refusal for room (the pinned share of the pool, or the tenant's quota) is a
// 429 pin_quota_exceeded the caller may retry after unpinning. `client_gone` (polled while a
// document computes) true: the document in progress is cancelled and the batch fails as above,
// with the code client_disconnected (nobody reads it; under kKeep its pins are undone).
std::optional<ApiError> pin_document_batch(const RequestBuilder& builder, engine::ServingEngine& engine,
                                           const std::vector<DocumentRef>& docs, const std::string& tenant,
                                           std::vector<engine::DocumentInfo>& pinned, PinMode mode = PinMode::kKeep,
                                           const std::function<bool()>& client_gone = {});

}  // namespace lazyattn::server
