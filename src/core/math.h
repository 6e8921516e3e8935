// Integer arithmetic written once.
#pragma once

#include <concepts>
#include <type_traits>

namespace lazyattn {

// ceil(a / b) for a >= 0 and b > 0: how many b-sized pieces hold a (blocks for tokens, tiles
// for rows, budget tokens for rows).
template <std::integral A, std::integral B>
constexpr std::common_type_t<A, B> ceil_div(A a, B b) {
    return (a + b - 1) / b;
}

}  // namespace lazyattn
