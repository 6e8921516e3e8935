// Wall-clock helpers for stats (TTFT, tokens per second).
#pragma once

#include <chrono>

namespace lazyattn {

inline double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace lazyattn
