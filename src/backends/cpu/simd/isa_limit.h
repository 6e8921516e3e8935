// The widest instruction set the CPU kernels may use: what the CPU supports, lowered by the
// environment variable LAZYATTN_CPU_ISA=avx512|avx2|scalar (read once). Tests run the kernels a
// second time under LAZYATTN_CPU_ISA=scalar so the portable paths are checked on any host, and a
// user can rule out a SIMD kernel when chasing a numerical difference.
#pragma once

#include <cstdlib>
#include <cstring>

namespace lazyattn::backends::cpu::simd {

enum class IsaLimit { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

inline IsaLimit isa_limit() {
    static const IsaLimit limit = [] {
        const char* v = std::getenv("LAZYATTN_CPU_ISA");
        if (v == nullptr) return IsaLimit::kAvx512;
        if (std::strcmp(v, "scalar") == 0) return IsaLimit::kScalar;
        if (std::strcmp(v, "avx2") == 0) return IsaLimit::kAvx2;
        return IsaLimit::kAvx512;
    }();
    return limit;
}

}  // namespace lazyattn::backends::cpu::simd
