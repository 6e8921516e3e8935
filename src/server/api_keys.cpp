#include "server/api_keys.h"

#include "engine/request/tenant.h"

#include <xxhash.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>

namespace lazyattn::server {
namespace {

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

bool equal_constant_time(const std::string& a, const std::string& b) {
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

}  // namespace

namespace {

std::string key_tenant(const std::string& key) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "key-%016llx", (unsigned long long)XXH3_64bits(key.data(), key.size()));
    return buf;
}

std::string salted(std::string tenant, const std::string& cache_salt) {
    return engine::salted_tenant(std::move(tenant), cache_salt);
}

}  // namespace

ApiKeys::ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {
    for (const std::string& k : keys_) key_tenants_.push_back(key_tenant(k));
}

std::string ApiKeys::tenant_of(const std::string& key, const std::string& cache_salt) {
    return salted(key.empty() ? std::string() : key_tenant(key), cache_salt);
}

Expected<std::vector<std::string>> ApiKeys::read_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) return io_error("cannot read the API key file " + path);
    std::vector<std::string> keys;
    for (std::string line; std::getline(in, line);) {
        line = trim(line);
        if (line.empty() || line[0] == '#') continue;
        if (Status st = check_key(line); !st.ok()) {
            return invalid_argument("the API key file " + path + " line " + std::to_string(keys.size() + 1) + ": " +
                                    st.message());
        }
        keys.push_back(line);
    }
    if (keys.empty()) return invalid_argument("the API key file " + path + " holds no key");
    return keys;
}

Status ApiKeys::check_key(const std::string& key) {
    if (key.empty()) return invalid_argument("an API key must not be empty");
    for (const char c : key) {
        if (c <= ' ' || c > '~') {
            return invalid_argument("an API key may hold only visible ASCII characters (no spaces or control bytes)");
        }
    }
    return {};
}

Expected<std::vector<std::string>> ApiKeys::parse_key_list(const std::string& spelled) {
    std::vector<std::string> keys;
    for (size_t start = 0;;) {
        const size_t comma = std::min(spelled.find(',', start), spelled.size());
        const std::string key = spelled.substr(start, comma - start);
        if (Status st = check_key(key); !st.ok()) {
            return invalid_argument(spelled.find(',') == std::string::npos
                                        ? st.message()
                                        : "key " + std::to_string(keys.size() + 1) +
                                              " of the comma-separated list: " + st.message());
        }
        keys.push_back(key);
        if (comma == spelled.size()) return keys;
        start = comma + 1;
    }
}

namespace {

// The key a request presents: "Authorization: Bearer <key>" (OpenAI's clients), else
// "X-Api-Key: <key>" (Anthropic's clients; llama-server takes both). "" when neither.
std::string presented_key(const http::HttpRequest& request) {
    if (!request.has_header("authorization")) return trim(request.header("x-api-key"));
    // credentials = auth-scheme 1*SP token68; the scheme is case-insensitive (RFC 9110 11.1,
    // RFC 6750 2.1: "bearer" and "BEARER" are "Bearer").
    const std::string& auth = request.header("authorization");
    const std::string scheme = "bearer";
    if (auth.size() <= scheme.size() + 1 || (auth[scheme.size()] != ' ' && auth[scheme.size()] != '\t')) return "";
    for (size_t i = 0; i < scheme.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(auth[i])) != scheme[i]) return "";
    }
    return trim(auth.substr(scheme.size() + 1));
}

}  // namespace

std::optional<size_t> ApiKeys::match(const http::HttpRequest& request) const {
    const std::string presented = presented_key(request);
    if (presented.empty()) return std::nullopt;  // no key is ever empty (check_key)
    std::optional<size_t> found;
    for (size_t i = 0; i < keys_.size(); ++i) {
        if (equal_constant_time(presented, keys_[i]) && !found) found = i;
    }
    return found;
}

std::string ApiKeys::tenant(const http::HttpRequest& request, const std::string& cache_salt) const {
    std::string t;
    if (enabled()) {
        if (auto i = match(request)) t = key_tenants_[*i];
    }
    return salted(std::move(t), cache_salt);
}

}  // namespace lazyattn::server
