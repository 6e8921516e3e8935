#include <vector>

#include "backends/cpu/simd/isa_limit.h"
#include "backends/cpu/simd/quant_dot_impl.h"

namespace lazyattn::backends::cpu::simd {
namespace {

std::vector<const QuantKernels*> supported_sets() {
    std::vector<const QuantKernels*> sets;
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && isa_limit() >= IsaLimit::kAvx2;
    if (avx2 && isa_limit() >= IsaLimit::kAvx512 && __builtin_cpu_supports("avx512vnni") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw")) {
        sets.push_back(&kAvx512VnniKernels);
    }
    if (avx2) sets.push_back(&kAvx2Kernels);
    sets.push_back(&kScalarKernels);
    return sets;
}

const std::vector<const QuantKernels*>& sets() {
    static const std::vector<const QuantKernels*> s = supported_sets();
    return s;
}

}  // namespace

const QuantKernels& quant_kernels() { return *sets().front(); }
int num_quant_kernel_sets() { return int(sets().size()); }
const QuantKernels& quant_kernel_set(int index) { return *sets().at(index); }

}  // namespace lazyattn::backends::cpu::simd
