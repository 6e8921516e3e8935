// ResponseBudget: how large one request's response may grow. A few bytes of JSON can ask for n
// choices x max_tokens tokens x (1 + top_logprobs) alternatives, each rendered as an object with
// its text and bytes: megabytes out and many times that held while the body is built. Every
// request is sized before it runs against one bound (docs/api.md, "Security"): a max_tokens the
// client gave that passes it is a 400 naming the limit; the server's default is lowered to fit.
#pragma once

#include <climits>
#include <cstdint>

namespace lazyattn::server {

struct ResponseShape {
    int32_t n = 1;            // choices
    int32_t max_tokens = 0;   // generated tokens per choice
    int32_t echo_tokens = 0;  // prompt tokens returned per choice (echo)
    int32_t logprobs = -1;    // alternatives per token (-1: no logprobs)
};

// The estimate's parts: a generated token's text, and one logprob entry (token, logprob, bytes).
inline constexpr int64_t kTokenTextBytes = 16;
inline constexpr int64_t kLogprobEntryBytes = 96;
// The bound on one response's estimated size.
inline constexpr int64_t kMaxResponseBytes = 8ll << 20;

inline int64_t bytes_per_token(const ResponseShape& r) {
    return kTokenTextBytes + (r.logprobs >= 0 ? int64_t(r.logprobs + 1) * kLogprobEntryBytes : 0);
}

// Estimated bytes of the whole response (all choices).
inline int64_t response_bytes_estimate(const ResponseShape& r) {
    return int64_t(r.n) * (int64_t(r.max_tokens) + r.echo_tokens) * bytes_per_token(r);
}

// The largest max_tokens within kMaxResponseBytes for this shape (0 when even the echo passes it).
inline int32_t max_tokens_within_budget(const ResponseShape& r) {
    const int64_t per_choice = kMaxResponseBytes / (int64_t(r.n) * bytes_per_token(r)) - r.echo_tokens;
    return per_choice <= 0 ? 0 : per_choice > INT32_MAX ? INT32_MAX : int32_t(per_choice);
}

}  // namespace lazyattn::server
