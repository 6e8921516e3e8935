// ApiKeys: who may call the server, and which tenant a caller is. Keys come from --api-key and
// --api-key-file; a request carries one as "Authorization: Bearer <key>" (OpenAI's scheme), or as
// "X-Api-Key: <key>" (Anthropic's; llama-server takes both) when it sends no Authorization. Each
// key is a tenant of its own; a request's cache_salt splits that tenant further. Tenants name
// cache namespaces (engine::RagRequest::tenant): derived from a hash of the key, never the key.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "http/http_message.h"

namespace lazyattn::server {

class ApiKeys {
public:
    ApiKeys() = default;
    explicit ApiKeys(std::vector<std::string> keys);

    // One key per line; blank lines and lines starting with '#' are skipped. kInvalidArgument
    // for a file without keys or with a key check_key() refuses, kIoError when it cannot be read.
    static Expected<std::vector<std::string>> read_file(const std::string& path);
    // One --api-key value: one key, or several joined by commas. kInvalidArgument when it yields
    // no key or an empty one ("", ",", "a,,b"): such a setting would otherwise turn
    // authentication off, or take the next word of the command line as the key.
    static Expected<std::vector<std::string>> parse_key_list(const std::string& spelled);
    // A key a client can present: non-empty, visible ASCII (a Bearer credential, RFC 6750 2.1,
    // carries no spaces or control bytes; a key with them could never match).
    static Status check_key(const std::string& key);

    bool enabled() const { return !keys_.empty(); }
    // The index of the key the request presents; nullopt when it presents none or a wrong one.
    // Compares against every key in constant time per key (no early exit on a prefix match).
    std::optional<size_t> match(const http::HttpRequest& request) const;
    // The tenant of a request: its key's namespace (none when keys are off), refined by the
    // request's cache_salt. "" is the shared tenant of keyless, saltless requests.
    std::string tenant(const http::HttpRequest& request, const std::string& cache_salt) const;
    // The same rule without a request: the tenant of `key` ("" = keys off) and `cache_salt`
    // (what `lazyattn precompute --api-key --cache-salt` computes documents for).
    static std::string tenant_of(const std::string& key, const std::string& cache_salt);

private:
    std::vector<std::string> keys_;
    std::vector<std::string> key_tenants_;  // per key: "key-" + a hash of it
};

}  // namespace lazyattn::server
