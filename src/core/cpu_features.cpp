#include "core/cpu_features.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

namespace lazyattn {

CpuIsa CpuFeatures::widest() const {
    if (has_avx512_fma() && has_avx512_bw_vl() && has_avx2_fma()) return CpuIsa::kAvx512;
    if (has_avx2_fma()) return CpuIsa::kAvx2;
    return CpuIsa::kScalar;
}

CpuFeatures probe_cpu_features() {
    __builtin_cpu_init();
    CpuFeatures f;
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    // F16C is CPUID.1:ECX bit 29, read directly: clang's __builtin_cpu_supports has no "f16c".
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    f.f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512vnni = __builtin_cpu_supports("avx512vnni");
    f.avx512dq = __builtin_cpu_supports("avx512dq");
    f.avx512cd = __builtin_cpu_supports("avx512cd");
    return f;
}

CpuFeatures limit_cpu_features(CpuFeatures f, CpuIsa limit) {
    if (limit < CpuIsa::kAvx512) f.avx512f = f.avx512bw = f.avx512vl = f.avx512vnni = f.avx512dq = f.avx512cd = false;
    if (limit < CpuIsa::kAvx2) f.avx2 = f.fma = f.f16c = false;
    return f;
}

CpuIsa parse_cpu_isa_limit(const char* value) {
    if (value == nullptr) return CpuIsa::kAvx512;
    if (std::strcmp(value, "scalar") == 0) return CpuIsa::kScalar;
    if (std::strcmp(value, "avx2") == 0) return CpuIsa::kAvx2;
    return CpuIsa::kAvx512;
}

const char* cpu_isa_name(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::kScalar:
            return "scalar";
        case CpuIsa::kAvx2:
            return "avx2";
        case CpuIsa::kAvx512:
            return "avx512";
    }
    return "?";
}

CpuIsa cpu_isa_limit() {
    static const CpuIsa limit = parse_cpu_isa_limit(std::getenv("LAZYATTN_CPU_ISA"));
    return limit;
}

const CpuFeatures& cpu_features() {
    static const CpuFeatures features = limit_cpu_features(probe_cpu_features(), cpu_isa_limit());
    return features;
}

}  // namespace lazyattn
