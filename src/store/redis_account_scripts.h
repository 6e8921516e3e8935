// The Lua scripts of the Redis tier's size account (see redis_account_scripts.cpp for each one's
// keys, arguments and reply).
#pragma once

namespace lazyattn::store {

extern const char* const kAccountScript;  // a written entry accounted; past the cap, LRU evictions
extern const char* const kTouchScript;    // a hit's use renewed, or a gone entry forgotten
extern const char* const kAdoptScript;    // the rebuild: entries found by SCAN adopted

}  // namespace lazyattn::store
