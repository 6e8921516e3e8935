#include "store/redis_url.h"

#include <algorithm>
#include <charconv>

namespace lazyattn::store {
namespace {

bool parse_int(std::string_view s, int* out) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// %XX escapes of a URL's userinfo; false on a malformed escape.
bool percent_decode(std::string_view in, std::string* out) {
    out->clear();
    for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            out->push_back(in[i]);
            continue;
        }
        unsigned v = 0;  // unsigned: from_chars takes no sign then
        if (i + 2 >= in.size()) return false;
        const auto r = std::from_chars(in.data() + i + 1, in.data() + i + 3, v, 16);
        if (r.ec != std::errc() || r.ptr != in.data() + i + 3) return false;
        out->push_back(char(v));
        i += 2;
    }
    return true;
}

}  // namespace

std::string redact_redis_url(const std::string& url) {
    const size_t scheme = url.find("://");
    const size_t at = url.rfind('@');
    if (scheme == std::string::npos || at == std::string::npos || at < scheme) return url;
    const size_t colon = url.find(':', scheme + 3);
    if (colon == std::string::npos || colon > at) return url;  // a user name only
    return url.substr(0, colon + 1) + "***" + url.substr(at);
}

Expected<RedisAddress> parse_redis_url(const std::string& url) {
    const std::string scheme = "redis://";
    const std::string shown = redact_redis_url(url);
    if (url.rfind(scheme, 0) != 0) return invalid_argument("'" + shown + "' is not a redis:// URL");
    std::string_view rest = std::string_view(url).substr(scheme.size());
    RedisAddress a;
    if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
        const std::string_view userinfo = rest.substr(0, at);
        const size_t colon = userinfo.find(':');
        if (colon == std::string_view::npos) {
            return invalid_argument("'" + shown + "': the part before '@' must be [USER]:PASSWORD");
        }
        if (!percent_decode(userinfo.substr(0, colon), &a.user) ||
            !percent_decode(userinfo.substr(colon + 1), &a.password)) {
            return invalid_argument("'" + shown + "': a bad %-escape before '@'");
        }
        if (a.password.empty()) return invalid_argument("'" + shown + "': empty password before '@'");
        rest = rest.substr(at + 1);
    }
    if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
        if (!parse_int(rest.substr(slash + 1), &a.db) || a.db < 0) {
            return invalid_argument("'" + shown + "': the database after '/' must be a number");
        }
        rest = rest.substr(0, slash);
    }
    if (rest.empty()) return invalid_argument("'" + shown + "' names no host (redis://HOST:PORT[/DB])");
    for (size_t from = 0; from <= rest.size();) {
        size_t comma = rest.find(',', from);
        if (comma == std::string_view::npos) comma = rest.size();
        const std::string_view node = rest.substr(from, comma - from);
        const size_t colon = node.rfind(':');
        RedisEndpoint e{std::string(node.substr(0, colon)), 6379};
        if (colon != std::string_view::npos &&
            (!parse_int(node.substr(colon + 1), &e.port) || e.port <= 0 || e.port > 65535)) {
            return invalid_argument("'" + shown + "': the port must be a number in [1, 65535]");
        }
        if (e.host.empty()) return invalid_argument("'" + shown + "' names no host (redis://HOST:PORT[/DB])");
        if (std::find(a.seeds.begin(), a.seeds.end(), e) != a.seeds.end()) {
            return invalid_argument("'" + shown + "' names " + e.str() + " twice");
        }
        a.seeds.push_back(std::move(e));
        from = comma + 1;
    }
    a.host = a.seeds[0].host;
    a.port = a.seeds[0].port;
    return a;
}

}  // namespace lazyattn::store
