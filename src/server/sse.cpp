#include "server/sse.h"

namespace lazyattn::server {

std::string sse_event(std::string_view payload) {
    std::string out;
    out.reserve(payload.size() + 8);
    size_t start = 0;
    for (;;) {
        const size_t nl = payload.find('\n', start);
        std::string_view line =
            payload.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        out += "data: ";
        out += line;
        out += '\n';
        if (nl == std::string_view::npos) break;
        start = nl + 1;
    }
    out += '\n';
    return out;
}

std::string sse_named_event(std::string_view name, std::string_view payload) {
    std::string out = "event: ";
    out += name;
    out += '\n';
    return out + sse_event(payload);
}

std::string sse_comment(std::string_view text) { return ": " + std::string(text) + "\n\n"; }

}  // namespace lazyattn::server
