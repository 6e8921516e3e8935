// Router: (method, path) -> handler. Patterns are literal paths whose "{name}" segments match one
// non-empty path segment each (its text lands in HttpRequest::path_params). Each route says which
// lane of workers runs it, so cheap routes (health, metrics) never wait behind generations.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "http/http_message.h"

namespace lazyattn::http {

enum class Lane { kLight, kHeavy };

using Handler = std::function<void(const HttpRequest&, HttpResponse&, const ClientLink&)>;

struct Route {
    std::string method;
    std::vector<std::string> segments;  // the pattern split at '/'
    Lane lane = Lane::kHeavy;
    Handler handler;
};

struct RouteMatch {
    const Route* route = nullptr;  // null: no route (status says 404 or 405)
    int status = 404;
    std::vector<std::string> params;
};

class Router {
public:
    void add(std::string method, const std::string& pattern, Lane lane, Handler handler);
    RouteMatch match(const std::string& method, const std::string& path) const;

private:
    std::vector<Route> routes_;
};

}  // namespace lazyattn::http
