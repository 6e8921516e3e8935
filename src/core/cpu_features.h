// What the CPU can run, probed once per process and lowered by LAZYATTN_CPU_ISA=avx512|avx2|scalar.
// Every SIMD dispatcher asks this one module, so the environment limit applies to all of them
// alike: tests run the kernels a second and third time under `scalar` and `avx2` to check the
// portable paths on any host, and a user can rule out a SIMD kernel when chasing a numerical
// difference. AMX is never probed nor used: it needs an OS permission request and traps without it.
#pragma once

namespace lazyattn {

// Instruction-set tiers, in order: a limit keeps the features of its tier and those below.
enum class CpuIsa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

struct CpuFeatures {
    // The AVX2 tier.
    bool avx2 = false;
    bool fma = false;
    bool f16c = false;
    // The AVX-512 tier.
    bool avx512f = false;
    bool avx512bw = false;
    bool avx512vl = false;
    bool avx512vnni = false;
    bool avx512dq = false;
    bool avx512cd = false;

    // What the kernel families need.
    bool has_avx2_fma() const { return avx2 && fma; }
    bool has_avx2_f16c() const { return avx2 && f16c; }
    bool has_avx512_fma() const { return avx512f && fma; }
    bool has_avx512_bw_vl() const { return avx512f && avx512bw && avx512vl; }
    bool has_avx512_vnni() const { return has_avx2_fma() && has_avx512_bw_vl() && avx512vnni; }
    // GCC's x86-64-v4 level (AVX-512 F, BW, VL, DQ, CD over AVX2, FMA): code compiled with
    // target("arch=x86-64-v4").
    bool has_x86_64_v4() const { return has_avx2_fma() && has_avx512_bw_vl() && avx512dq && avx512cd; }
    // The widest tier every flag of which is present (for reports).
    CpuIsa widest() const;
    // Spelled out (not `= default`): nvcc compiles headers that include this one as C++17.
    bool operator==(const CpuFeatures& o) const {
        return avx2 == o.avx2 && fma == o.fma && f16c == o.f16c && avx512f == o.avx512f && avx512bw == o.avx512bw &&
               avx512vl == o.avx512vl && avx512vnni == o.avx512vnni && avx512dq == o.avx512dq && avx512cd == o.avx512cd;
    }
};

// The hardware as probed (no environment limit).
CpuFeatures probe_cpu_features();
// `f` with every feature above `limit`'s tier cleared.
CpuFeatures limit_cpu_features(CpuFeatures f, CpuIsa limit);
// LAZYATTN_CPU_ISA's value as a limit: "scalar", "avx2"; anything else (or null) is no limit.
CpuIsa parse_cpu_isa_limit(const char* value);
const char* cpu_isa_name(CpuIsa isa);

// The features the kernels may use: the probe lowered by LAZYATTN_CPU_ISA, both read once.
const CpuFeatures& cpu_features();
// The limit LAZYATTN_CPU_ISA sets (kAvx512 when unset).
CpuIsa cpu_isa_limit();

}  // namespace lazyattn
