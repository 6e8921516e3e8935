#include "bench/rag_stats.h"

#include <algorithm>
#include <random>
#include <unordered_set>

#include "bench/rag_runner.h"

namespace lazyattn::bench {

Interval bootstrap_percentile_ci(const std::vector<double>& values, double p, double level, int32_t resamples,
                                 uint64_t seed) {
    if (values.empty() || resamples <= 0) return {};
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<size_t> pick(0, values.size() - 1);
    std::vector<double> estimates, sample(values.size());
    estimates.reserve(size_t(resamples));
    for (int32_t r = 0; r < resamples; ++r) {
        for (double& x : sample) x = values[pick(rng)];
        estimates.push_back(percentile(sample, p));
    }
    const double tail = 50.0 * (1.0 - std::clamp(level, 0.0, 1.0));  // percent in each tail
    return {percentile(estimates, tail), percentile(estimates, 100.0 - tail)};
}

CompulsoryMisses count_compulsory_misses(const std::vector<std::vector<int32_t>>& request_docs,
                                         int32_t first_measured) {
    CompulsoryMisses m;
    std::unordered_set<int32_t> seen;
    for (size_t i = 0; i < request_docs.size(); ++i) {
        const bool measured = int64_t(i) >= int64_t(first_measured);
        for (int32_t d : request_docs[i]) {
            const bool first_touch = seen.insert(d).second;
            if (!measured) continue;
            ++m.lookups;
            if (first_touch) ++m.compulsory;
        }
    }
    return m;
}

double measured_span_s(std::vector<double> done_s, int32_t warmup, double start_s) {
    if (warmup < 0 || size_t(warmup) >= done_s.size()) return 0;
    std::sort(done_s.begin(), done_s.end());
    const double from = warmup == 0 ? start_s : done_s[size_t(warmup - 1)];
    return std::max(0.0, done_s.back() - from);
}

double steady_throughput(const std::vector<double>& done_s, int32_t warmup, double start_s) {
    const double span = measured_span_s(done_s, warmup, start_s);
    return span > 0 ? double(int64_t(done_s.size()) - warmup) / span : 0;
}

}  // namespace lazyattn::bench
