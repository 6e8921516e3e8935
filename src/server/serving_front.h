// ServingFront: what every API does between its own request body and its own response shape,
// written once for the HTTP server and the Python extension. An API (OpenAI completions and chat,
// llama-server's native /completion, Anthropic Messages, OpenAI Responses, the Python LLM) turns
// its body into a GenerationRequest; the front checks it (model name, vocabulary, max_tokens,
// response size), lays it out (RequestBuilder: documents, templates, known documents), queues
// its n choices as one group and notes its documents as known once the engine took it. The
// caller's defaults are FrontSettings, set once at start-up.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/request/request_handle.h"
#include "engine/serving_engine.h"
#include "grammar/constraint_compiler.h"
#include "server/api_error.h"
#include "server/doorbell.h"
#include "server/known_documents.h"
#include "server/message_documents.h"
#include "server/openai_request.h"
#include "server/output_options.h"
#include "server/request_builder.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::server {

// How requests that do not say are answered, and what no request may pass.
struct FrontSettings {
    std::string model_id;              // "" accepts any `model`
    std::vector<std::string> aliases;  // other names the model answers to (--alias)
    bool strict_model_name = false;    // an unknown `model` is a 404
    // The most tokens one request holds, prompt and generation together (0: the engine's whole
    // context). llama-server's slots: `--parallel N` with `--ctx-size C` bounds each request by
    // C/N; the KV pool and the engine's context stay shared. Every bound a client sees (the
    // prompt's refusal and its n_ctx, max_tokens' clamp, /props and /slots n_ctx, `truncated`)
    // is this one: ServingFront::context_length().
    int32_t request_context = 0;
    // The most tokens one request may generate; a larger max_tokens is clamped (0: the context).
    int32_t max_tokens_cap = 0;
    // max_tokens not given: this many, or the rest of the context when that is less (0: the
    // builder's rule: 16 for completions as OpenAI, the rest of the context for chat).
    int32_t default_max_tokens = 0;
    // A max_tokens the context cannot hold after the prompt: clamped (true, as llama-server and
    // the HTTP API do) or a 400 naming max_tokens (false: the Python API).
    bool clamp_max_tokens = true;
    // Bound a whole response to kMaxResponseBytes (the HTTP server; in-process callers have none).
    bool bound_response_bytes = true;
    engine::DocumentReuse document_reuse;  // requests that do not say
    DocumentsFrom documents_from;          // requests that do not say
    int32_t max_documents = kDefaultMaxDocuments;
    KnownDocuments::Limits known_documents;
};

// One request, checked and laid out, not yet queued.
struct PreparedRequest {
    GenerationRequest gen;
    engine::RagRequest rag;
    std::vector<DocumentRef> known_later;  // noted as known by submit()
    OutputOptions output;
    int32_t context_length = 0;  // the most tokens it may hold (ServingFront::context_length())
};

// The n choices of one queued request.
struct SubmittedRequest {
    std::vector<std::shared_ptr<engine::RequestHandle>> handles;
    std::shared_ptr<Doorbell> bell;  // rings on every event of every choice
};

class ServingFront {
public:
    ServingFront(engine::ServingEngine& engine, const tokenizer::Tokenizer& tokenizer,
                 std::optional<tokenizer::ChatTemplate> chat, FrontSettings settings);

    // Checks `gen` and lays it out for `tenant`. `client_gone` is polled during long work
    // (delimiter matching); kCancelled then. The error names the offending field.
    std::optional<ApiError> prepare(GenerationRequest gen, const std::string& tenant,
                                    const std::function<bool()>& client_gone, PreparedRequest& out) const;
    // Queues every choice of `p` as one group (each its own seed: the request's + i) and notes
    // its documents as known once queued. `on_event` (optional) is called on the engine thread
    // with every event of every choice, before the handle holds it (the Python async waiters).
    Expected<SubmittedRequest> submit(PreparedRequest& p, engine::RequestHandle::Callback on_event = {}) const;

    // True when `name` names the served model (its id, the id without ".gguf", an alias).
    bool is_model(const std::string& name) const;

    engine::ServingEngine& engine() const { return engine_; }
    const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }
    const RequestBuilder& builder() const { return builder_; }
    const FrontSettings& settings() const { return settings_; }
    // The most tokens one request holds (FrontSettings::request_context, else the engine's).
    int32_t context_length() const;
    // Structured output: compiles, cache hits and what the compiled-grammar cache holds.
    grammar::ConstraintCompiler::Stats constraint_stats() const { return constraints_->stats(); }

private:
    std::optional<ApiError> fit_max_tokens(const GenerationRequest& gen, engine::RagRequest& rag) const;

    engine::ServingEngine& engine_;
    const tokenizer::Tokenizer& tokenizer_;
    FrontSettings settings_;
    RequestBuilder builder_;
    // Structured output: compiles request constraints against this model's vocabulary (cached).
    std::unique_ptr<grammar::ConstraintCompiler> constraints_;
};

// A request's usage as the Python result's `usage` dict names it: counts (tokens, segments)
// and times (milliseconds, tokens per second).
struct UsageField {
    const char* name;
    double value;
    bool is_count;
};
std::vector<UsageField> usage_fields(const engine::RequestStats& stats);

}  // namespace lazyattn::server
