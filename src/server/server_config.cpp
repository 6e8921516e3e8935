#include "server/server_config.h"

namespace lazyattn::server {

Status ServerConfig::validate() const {
    if (host.empty()) return invalid_argument("the host must not be empty");
    for (const std::string& h : more_hosts) {
        if (h.empty()) return invalid_argument("a host must not be empty");
    }
    if (port < 0 || port > 65535) return invalid_argument("the port must be in [0, 65535]");
    if (limits.max_body_bytes <= 0) return invalid_argument("the body size limit must be positive");
    if (limits.max_connections <= 0 || limits.max_connections_per_client <= 0)
        return invalid_argument("the connection limits must be positive");
    if (!(limits.header_timeout_s > 0) || !(limits.request_timeout_s > 0))
        return invalid_argument("the request timeouts must be positive");
    if (num_http_threads <= 0) return invalid_argument("the HTTP thread count must be positive");
    if (!(shutdown_timeout_s >= 0)) return invalid_argument("the shutdown timeout must be >= 0");
    if (max_tokens_cap <= 0) return invalid_argument("the max-tokens cap must be positive");
    if (request_context < 0) return invalid_argument("the request context must be >= 0");
    if (default_max_tokens < 0) return invalid_argument("the default max_tokens must be >= 0");
    LA_RETURN_IF_ERROR(sampling_defaults.validate());
    if (!(health_stall_s > 0)) return invalid_argument("the health stall limit must be positive");
    if (max_documents <= 0) return invalid_argument("--max-documents must be positive");
    if (documents_from.source == DocumentsSource::kDelimiter && !documents_from.delimiter)
        return invalid_argument("--documents-from delimiter needs --document-delimiter");
    if (model_id.empty()) return invalid_argument("the model id must not be empty");
    for (const std::string& k : api_keys) {
        if (k.empty()) return invalid_argument("an API key must not be empty");
    }
    return {};
}

}  // namespace lazyattn::server
