// The one CPU feature probe (core/cpu_features.h): LAZYATTN_CPU_ISA lowers what every dispatcher
// picks. ctest runs test_kernels unlimited and under LAZYATTN_CPU_ISA=avx2 and =scalar, so the
// second test checks each limit on the host at hand.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backend/cpu/attention_cpu.h"
#include "backend/cpu/simd/attention_decode.h"
#include "backend/cpu/simd/attention_tile.h"
#include "backend/cpu/simd/quant_dot.h"
#include "backend/cpu/simd/rope_rotate.h"
#include "backend/cpu/simd/swiglu.h"
#include "core/cpu_features.h"
#include "core/half_convert.h"

namespace lazyattn {
namespace {

using namespace backend::cpu;

TEST(CpuFeatures, LimitClearsTheTiersAboveIt) {
    CpuFeatures all;
    all.avx2 = all.fma = all.f16c = true;
    all.avx512f = all.avx512bw = all.avx512vl = all.avx512vnni = all.avx512dq = all.avx512cd = true;
    EXPECT_EQ(all.widest(), CpuIsa::kAvx512);
    EXPECT_EQ(limit_cpu_features(all, CpuIsa::kAvx512), all);
    const CpuFeatures avx2 = limit_cpu_features(all, CpuIsa::kAvx2);
    EXPECT_EQ(avx2.widest(), CpuIsa::kAvx2);
    EXPECT_TRUE(avx2.has_avx2_fma() && avx2.has_avx2_f16c());
    EXPECT_FALSE(avx2.has_avx512_fma() || avx2.has_avx512_bw_vl() || avx2.has_avx512_vnni() || avx2.has_x86_64_v4());
    const CpuFeatures scalar = limit_cpu_features(all, CpuIsa::kScalar);
    EXPECT_EQ(scalar, CpuFeatures{});
    EXPECT_EQ(scalar.widest(), CpuIsa::kScalar);
}

TEST(CpuFeatures, ParsesTheEnvironmentValue) {
    EXPECT_EQ(parse_cpu_isa_limit(nullptr), CpuIsa::kAvx512);
    EXPECT_EQ(parse_cpu_isa_limit("scalar"), CpuIsa::kScalar);
    EXPECT_EQ(parse_cpu_isa_limit("avx2"), CpuIsa::kAvx2);
    EXPECT_EQ(parse_cpu_isa_limit("avx512"), CpuIsa::kAvx512);
    for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
        EXPECT_EQ(parse_cpu_isa_limit(cpu_isa_name(isa)), isa);
    }
}

TEST(CpuFeatures, EveryDispatcherHonoursLazyattnCpuIsa) {
    const CpuIsa limit = parse_cpu_isa_limit(std::getenv("LAZYATTN_CPU_ISA"));
    EXPECT_EQ(cpu_isa_limit(), limit);
    const CpuFeatures hw = probe_cpu_features();
    EXPECT_EQ(cpu_features(), limit_cpu_features(hw, limit));
    std::printf("CPU: %s, limit %s\n", cpu_isa_name(hw.widest()), cpu_isa_name(limit));

    const bool avx512_allowed = limit == CpuIsa::kAvx512;
    EXPECT_EQ(simd::attend_block_q16() != nullptr, avx512_allowed && hw.has_avx512_fma());
    EXPECT_EQ(simd::attend_decode_block() != nullptr, avx512_allowed && hw.has_avx512_fma());
    EXPECT_EQ(simd::swiglu_kernel() != nullptr, avx512_allowed && hw.has_avx512_fma());
    EXPECT_EQ(simd::rope_rotate_kernel(128, 128) != nullptr, avx512_allowed && hw.has_avx512_fma());
    EXPECT_LE(int(half_convert_isa()), int(limit));
    EXPECT_LE(int(attention_rows_isa()), int(limit));

    const std::string quant = simd::quant_kernels().isa;
    for (int set = 0; set < simd::num_quant_kernel_sets(); ++set) {
        const std::string isa = simd::quant_kernel_set(set).isa;
        if (limit < CpuIsa::kAvx512) {
            EXPECT_NE(isa, "avx512vnni");
        }
        if (limit < CpuIsa::kAvx2) {
            EXPECT_EQ(isa, "scalar");
        }
    }
    if (limit == CpuIsa::kAvx2 && hw.has_avx2_fma()) {
        EXPECT_EQ(quant, "avx2");
        EXPECT_EQ(attention_rows_isa(), CpuIsa::kAvx2);
        if (hw.has_avx2_f16c()) {
            EXPECT_EQ(half_convert_isa(), CpuIsa::kAvx2);
        }
    }
    if (limit == CpuIsa::kScalar) {
        EXPECT_EQ(quant, "scalar");
        EXPECT_EQ(simd::num_quant_kernel_sets(), 1);
        EXPECT_EQ(attention_rows_isa(), CpuIsa::kScalar);
        EXPECT_EQ(half_convert_isa(), CpuIsa::kScalar);
    }
    if (limit == CpuIsa::kAvx512 && hw.has_avx512_vnni()) {
        EXPECT_EQ(quant, "avx512vnni");
    }
}

}  // namespace
}  // namespace lazyattn
