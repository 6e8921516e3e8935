// Parsing a request body into nlohmann::json without letting its shape cost more than its size.
// A parsed value costs far more than its text: `{"type":"text","text":"x"}` is 26 bytes of body
// and ~600 bytes of maps, nodes and strings, so a body of many tiny objects would take 20-30x
// its size before any field could be checked. The parse estimates what it has built so far and
// stops past a multiple of the body, and refuses a `content` or `documents` list longer than a
// request may use while it is being read, not after.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/status.h"

namespace lazyattn::server {

struct JsonBounds {
    // The parsed value may cost about this many times the body, plus kFloorBytes.
    static constexpr int64_t kBytesPerBodyByte = 3;
    static constexpr int64_t kFloorBytes = 1 << 20;
    // Longest `content` part list or `documents` list, at any depth (0: unbounded).
    int64_t max_list_items = 0;
    // The cost bound in bytes; 0: kFloorBytes + kBytesPerBodyByte x the body.
    int64_t max_cost_bytes = 0;
};

// The JSON value of `text`, or kInvalidArgument: malformed (the parser's reason), a number no
// double holds, a list past max_list_items (naming it), or a value past the cost bound.
Expected<nlohmann::json> parse_bounded_json(std::string_view text, const JsonBounds& bounds);

// What parse_bounded_json counts a value as costing (nlohmann's nodes, strings, maps and vector
// slots, with malloc's overhead); exposed for the test that checks it against the allocator.
int64_t estimated_json_bytes(const nlohmann::json& value);

}  // namespace lazyattn::server
