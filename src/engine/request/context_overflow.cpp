#include "engine/request/context_overflow.h"

#include <cstdio>
#include <string>

namespace lazyattn::engine {
namespace {

// Written and read only here, so the two cannot drift apart.
constexpr const char* kFormat =
    "prompt of %lld tokens (documents and question) leaves no room in the context length %lld";

}  // namespace

Status context_overflow(const ContextOverflow& sizes) {
    char buf[160];
    std::snprintf(buf, sizeof buf, kFormat, static_cast<long long>(sizes.prompt_tokens),
                  static_cast<long long>(sizes.context_length));
    return out_of_range(buf);
}

std::optional<ContextOverflow> parse_context_overflow(const Status& st) {
    if (st.code() != StatusCode::kOutOfRange) return std::nullopt;
    long long prompt = 0, context = 0;
    int end = 0;
    const std::string format = std::string(kFormat) + "%n";
    if (std::sscanf(st.message().c_str(), format.c_str(), &prompt, &context, &end) != 2 ||
        size_t(end) != st.message().size()) {
        return std::nullopt;
    }
    return ContextOverflow{prompt, context};
}

}  // namespace lazyattn::engine
