// Reading a hiredis reply: its text, and whether it is an error (of a given kind).
#pragma once

#include <hiredis/hiredis.h>

#include <string_view>

namespace lazyattn::store {

inline std::string_view reply_text(const redisReply* r) {
    return r != nullptr && r->str != nullptr ? std::string_view(r->str, r->len) : std::string_view();
}

// An error reply whose text starts with `prefix` ("" for any error).
inline bool is_error_reply(const redisReply* r, std::string_view prefix = "") {
    return r != nullptr && r->type == REDIS_REPLY_ERROR && reply_text(r).rfind(prefix, 0) == 0;
}

}  // namespace lazyattn::store
