// Times one matmul of the CPU backend per weight type on random weights (valid fp16 scales):
// decode (1 row) and prefill (64 rows by default), median of N runs, the types interleaved
// round by round so machine noise hits them alike. Prints a Markdown table: type, rows, ms,
// GB/s of weight bytes read once, and ms relative to Q4_0 per weight byte.
//   build/tools/bench_matmul [--threads 2] [--dim 4096] [--out 4096] [--rows 1,64] [--reps 15]
//                            [--types Q4_0,Q4_K,...]
// LAZYATTN_CPU_ISA=avx2|scalar caps the kernel set as for the engine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/simd/quant_dot.h"
#include "core/fp16.h"
#include "loader/ggml_type.h"

using namespace lazyattn;
using W = kernels::GgmlType;

namespace {

struct TypeInfo {
    const char* name;
    W type;
};
const TypeInfo kAll[] = {{"Q4_0", W::kQ4_0}, {"Q4_1", W::kQ4_1}, {"Q5_0", W::kQ5_0}, {"Q5_1", W::kQ5_1},
                         {"Q8_0", W::kQ8_0}, {"Q2_K", W::kQ2_K}, {"Q3_K", W::kQ3_K}, {"Q4_K", W::kQ4_K},
                         {"Q5_K", W::kQ5_K}, {"Q6_K", W::kQ6_K}, {"F16", W::kF16},   {"BF16", W::kBF16},
                         {"F32", W::kF32}};

void put_half(uint8_t* p, float v) {
    const uint16_t h = fp32_to_fp16(v);
    std::memcpy(p, &h, 2);
}

std::vector<uint8_t> random_weights(W t, int64_t rows, int64_t n, std::mt19937_64& rng) {
    const auto tr = loader::ggml_type_traits(static_cast<uint32_t>(t));
    const int64_t blocks = rows * n / tr.block_size;
    std::vector<uint8_t> w(blocks * tr.type_size);
    std::uniform_real_distribution<float> f(-1.0f, 1.0f), d(0.001f, 0.02f);
    if (t == W::kF16 || t == W::kBF16 || t == W::kF32) {
        for (int64_t i = 0; i < rows * n; ++i) {
            const float v = f(rng) * 0.05f;
            if (t == W::kF32) {
                std::memcpy(w.data() + 4 * i, &v, 4);
            } else {
                const uint16_t h = t == W::kF16 ? fp32_to_fp16(v) : fp32_to_bf16(v);
                std::memcpy(w.data() + 2 * i, &h, 2);
            }
        }
        return w;
    }
    for (auto& b : w) b = uint8_t(rng());
    for (int64_t i = 0; i < blocks; ++i) {
        uint8_t* b = w.data() + i * tr.type_size;
        switch (t) {
            case W::kQ4_0:
            case W::kQ5_0:
            case W::kQ8_0:
                put_half(b, d(rng));
                break;
            case W::kQ4_1:
            case W::kQ5_1:
            case W::kQ4_K:
            case W::kQ5_K:
                put_half(b, d(rng)), put_half(b + 2, d(rng));
                break;
            case W::kQ2_K:
                put_half(b + 80, d(rng)), put_half(b + 82, d(rng));
                break;
            case W::kQ3_K:
                put_half(b + 108, d(rng));
                break;
            case W::kQ6_K:
                put_half(b + 208, d(rng));
                break;
            default:
                break;
        }
    }
    return w;
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    int threads = 2, reps = 15;
    int64_t dim = 4096, out_dim = 4096;
    std::string rows_arg = "1,64", types_arg = "Q4_0,Q8_0,Q4_K,Q5_K,Q6_K,F16,BF16,Q5_0,Q5_1,Q2_K,Q3_K";
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i], v = argv[i + 1];
        if (a == "--threads")
            threads = std::atoi(v.c_str());
        else if (a == "--dim")
            dim = std::atoll(v.c_str());
        else if (a == "--out")
            out_dim = std::atoll(v.c_str());
        else if (a == "--rows")
            rows_arg = v;
        else if (a == "--reps")
            reps = std::atoi(v.c_str());
        else if (a == "--types")
            types_arg = v;
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }
    auto cpu = backend::make_cpu_backend(threads);
    std::mt19937_64 rng(1234);
    struct Case {
        std::string name;
        W type;
        std::vector<uint8_t> w;
        std::shared_ptr<const void> prepared;
        std::map<int64_t, std::vector<double>> ms;
    };
    std::vector<Case> cases;
    for (const auto& name : split(types_arg)) {
        const TypeInfo* info = nullptr;
        for (const auto& t : kAll) {
            if (name == t.name) info = &t;
        }
        if (info == nullptr) {
            std::fprintf(stderr, "unknown type %s\n", name.c_str());
            return 2;
        }
        Case c{name, info->type, random_weights(info->type, out_dim, dim, rng), nullptr, {}};
        c.prepared = cpu->prepare_weight(c.w.data(), c.type, dim, out_dim);
        cases.push_back(std::move(c));
    }
    std::vector<int64_t> rows;
    for (const auto& r : split(rows_arg)) rows.push_back(std::atoll(r.c_str()));
    const int64_t max_rows = *std::max_element(rows.begin(), rows.end());
    std::vector<float> x(max_rows * dim), y(max_rows * out_dim);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    for (auto& v : x) v = u(rng);
    // Rounds: every case once per round (1 warm-up round not counted).
    for (int rep = 0; rep <= reps; ++rep) {
        for (auto& c : cases) {
            for (int64_t r : rows) {
                kernels::MatmulParams p{x.data(), c.w.data(), c.type, nullptr, y.data(), r, dim, out_dim};
                p.w_prepared = c.prepared.get();
                const auto t0 = std::chrono::steady_clock::now();
                cpu->matmul(p);
                const auto t1 = std::chrono::steady_clock::now();
                if (rep > 0) c.ms[r].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
            }
        }
    }
    auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    std::printf("isa %s, %d threads, %lld x %lld weights, median of %d\n\n", backend::cpu::simd::quant_kernels().isa,
                threads, (long long)out_dim, (long long)dim, reps);
    std::printf("| type | rows | ms | weight GB/s | ms per weight byte vs Q4_0 |\n|---|---:|---:|---:|---:|\n");
    std::map<int64_t, double> q4_per_byte;
    for (auto& c : cases) {
        if (c.name == "Q4_0") {
            for (int64_t r : rows) q4_per_byte[r] = median(c.ms[r]) / double(c.w.size());
        }
    }
    for (int64_t r : rows) {
        for (auto& c : cases) {
            const double ms = median(c.ms[r]);
            const double gbs = double(c.w.size()) / (ms * 1e6);
            std::printf("| %s | %lld | %.3f | %.1f |", c.name.c_str(), (long long)r, ms, gbs);
            if (q4_per_byte.count(r) != 0)
                std::printf(" %.2fx |\n", ms / double(c.w.size()) / q4_per_byte[r]);
            else
                std::printf(" |\n");
        }
    }
    return 0;
}
