// Records the largest single heap allocation made inside a scope (the test binary replaces the
// global operator new in allocation_tracker.cpp): lets tests assert that the parser rejects a
// huge count before allocating for it.
#pragma once

#include <cstddef>

namespace lazyattn::loader::test {

class AllocationTracker {
public:
    AllocationTracker();
    ~AllocationTracker();
    size_t largest() const;
};

}  // namespace lazyattn::loader::test
