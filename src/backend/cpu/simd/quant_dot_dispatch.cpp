#include <vector>

#include "backend/cpu/simd/quant_dot_impl.h"
#include "core/cpu_features.h"

namespace lazyattn::backend::cpu::simd {
namespace {

std::vector<const QuantKernels*> supported_sets() {
    std::vector<const QuantKernels*> sets;
    const CpuFeatures& cpu = cpu_features();
    if (cpu.has_avx512_vnni()) sets.push_back(&kAvx512VnniKernels);
    if (cpu.has_avx2_fma()) sets.push_back(&kAvx2Kernels);
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

}  // namespace lazyattn::backend::cpu::simd
