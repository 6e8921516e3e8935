#include "http/router.h"

namespace lazyattn::http {
namespace {

std::vector<std::string> split_path(const std::string& path) {
    std::vector<std::string> out;
    size_t start = 1;  // paths start with '/'
    while (start <= path.size()) {
        const size_t slash = path.find('/', start);
        out.push_back(path.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
        if (slash == std::string::npos) break;
        start = slash + 1;
    }
    return out;
}

bool is_param(const std::string& segment) {
    return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

}  // namespace

void Router::add(std::string method, const std::string& pattern, Lane lane, Handler handler) {
    routes_.push_back({std::move(method), split_path(pattern), lane, std::move(handler)});
}

RouteMatch Router::match(const std::string& method, const std::string& path) const {
    RouteMatch out;
    const std::vector<std::string> parts = split_path(path);
    for (const Route& r : routes_) {
        if (r.segments.size() != parts.size()) continue;
        std::vector<std::string> params;
        bool ok = true;
        for (size_t i = 0; i < parts.size() && ok; ++i) {
            if (is_param(r.segments[i])) {
                ok = !parts[i].empty();
                params.push_back(parts[i]);
            } else {
                ok = r.segments[i] == parts[i];
            }
        }
        if (!ok) continue;
        if (r.method != method) {
            out.status = 405;
            continue;
        }
        return {&r, 200, std::move(params)};
    }
    return out;
}

}  // namespace lazyattn::http
