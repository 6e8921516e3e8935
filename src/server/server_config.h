// Run-time settings of the HTTP server (the engine's own live in EngineConfig). Filled once by
// `lazyattn serve` from the command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/request/document_reuse.h"
#include "http/http_limits.h"
#include "server/api_dialect.h"
#include "server/known_documents.h"
#include "server/message_documents.h"
#include "server/reasoning_split.h"
#include "server/sampling_defaults.h"
#include "template/value.h"

namespace lazyattn::server {

struct ServerConfig {
    std::string host = "127.0.0.1";
    std::vector<std::string> more_hosts;     // further addresses on the same port (--host a,b)
    int32_t port = 8080;                     // 0: any free port (HttpServer::port() tells which)
    http::HttpLimits limits;                 // body, header, deadline and connection caps
    int32_t num_http_threads = 128;          // generations answered at once (each stream holds one)
    double shutdown_timeout_s = 10;          // SIGTERM: in-flight requests get this long, then cancel
    std::string model_id;                    // what /v1/models lists and responses name
    std::vector<std::string> model_aliases;  // other names requests may give (--alias a,b,c)
    std::vector<std::string> model_tags;     // GET /v1/models' `tags` (llama-server's --tags)
    std::string system_fingerprint;          // responses' system_fingerprint ("" is written as null)
    std::string model_path;                  // the GGUF file served (GET /props' model_path)
    bool slots_endpoint = true;              // GET /slots answers (llama-server's --slots; --no-slots: 501)
    bool metrics_endpoint = true;            // GET /metrics answers (--metrics, --no-metrics: 501)
    // Where OpenAI's API and llama-server's disagree, which this server follows (--api-dialect;
    // server/api_dialect.h): /metrics' default above, a Responses length stop's terminal event.
    ApiDialect api_dialect = ApiDialect::kOpenAI;
    // Replies carry llama-server's __verbose object (--verbose), unless a request sets verbose false.
    bool verbose_replies = false;
    // A request naming another model: 404 model_not_found (vLLM) when set; otherwise it is
    // answered by this server's one model, as llama-server does (clients such as LangChain send
    // a default name like "gpt-3.5-turbo"), and the response's `model` says which answered.
    bool strict_model_name = false;
    std::vector<std::string> api_keys;  // empty: no authentication
    bool health_needs_key = false;      // with api_keys: does GET /health need one too?
    bool metrics_needs_key = true;      // with api_keys: does GET /metrics?
    int32_t max_tokens_cap = 4096;      // no request generates more (larger max_tokens are clamped)
    // The most tokens one request holds, prompt and generation (0: the engine's context);
    // llama-server's --parallel N gives each of its N slots --ctx-size / N (FrontSettings).
    int32_t request_context = 0;
    // max_tokens of a request that sets none (llama-server's --n-predict; 0: the route's rule).
    int32_t default_max_tokens = 0;
    // What a request that does not set a sampling field samples with (--temp, --seed, ...).
    SamplingDefaults sampling_defaults;
    // /health answers 503 when work has been queued this long without the engine advancing.
    double health_stall_s = 60;
    double stats_interval_s = 10;  // a stats log line this often while busy
    // How requests that do not say read their documents (`--document-reuse`).
    engine::DocumentReuse document_reuse;
    // Where requests that do not say find documents inside their messages (--documents-from,
    // --document-delimiter, --documents-message), and the most documents one request may carry.
    DocumentsFrom documents_from;
    int32_t max_documents = kDefaultMaxDocuments;
    // The bounds of the known-document index (--known-documents-max, --known-documents-max-bytes).
    KnownDocuments::Limits known_documents;
    // Chat replies' <think> section (--reasoning-format; a request's reasoning_format wins).
    ReasoningFormat reasoning_format = ReasoningFormat::kAuto;
    // Chat template variables every request renders with (--chat-template-kwargs, --reasoning);
    // a request's chat_template_kwargs override them name by name. Undefined: none.
    tmpl::Value chat_template_kwargs;
    Status validate() const;
};

}  // namespace lazyattn::server
