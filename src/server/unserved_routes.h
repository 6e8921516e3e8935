// The routes llama-server (and OpenAI) clients may call that lazyattn does not serve: each
// answers 501 naming the feature and what lazyattn offers instead, never a 404 that reads as a
// wrong URL or a silent 200. One row per route; a feature that lands removes its rows.
#pragma once

#include <span>

#include "http/router.h"

namespace lazyattn::server {

struct UnservedRoute {
    const char* method;
    const char* path;     // the router's pattern ("{id}" for a path parameter)
    const char* feature;  // as the message names it
    const char* instead;  // what to use here, or why it is absent
};

// Every such route, in docs/api.md's order.
std::span<const UnservedRoute> unserved_routes();
// Registers each on the light lane (the answer needs no engine).
void add_unserved_routes(http::Router& router);

}  // namespace lazyattn::server
