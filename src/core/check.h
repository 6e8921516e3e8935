// LA_CHECK: for broken invariants only (a bug in lazyattn, never bad user input). Aborts with file
// and line so the failure is found at its cause.
#pragma once

#include <cstdio>
#include <cstdlib>

#define LA_CHECK(cond)                                                                    \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            std::abort();                                                                 \
        }                                                                                 \
    } while (0)

#define LA_CHECK_MSG(cond, ...)                                                           \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            std::fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
            std::fprintf(stderr, __VA_ARGS__);                                            \
            std::fprintf(stderr, "\n");                                                   \
            std::abort();                                                                 \
        }                                                                                 \
    } while (0)

#ifdef NDEBUG
#define LA_DCHECK(cond) ((void)0)
#else
#define LA_DCHECK(cond) LA_CHECK(cond)
#endif
