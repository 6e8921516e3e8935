// Statistics of a RAG benchmark run beyond plain percentiles: a bootstrap confidence interval
// of a percentile (how far a p50 from a few hundred noisy requests can be trusted), the
// compulsory misses of a request stream (first touches of a document, which no cache of any
// size avoids, so 1 - their share caps the hit ratio), and steady-state throughput (completions
// after the warm-up divided by the time they took).
#pragma once

#include <cstdint>
#include <vector>

#include "bench/proportions.h"  // Interval

namespace lazyattn::bench {

// The `level` (e.g. 0.95) percentile-bootstrap interval of the p-th percentile of `values`:
// `resamples` resamples with replacement, seeded, so a run reports the same interval twice.
// Empty input gives {0, 0}.
Interval bootstrap_percentile_ci(const std::vector<double>& values, double p, double level = 0.95,
                                 int32_t resamples = 2000, uint64_t seed = 1);

struct CompulsoryMisses {
    int64_t lookups = 0;     // document lookups of the measured requests
    int64_t compulsory = 0;  // of those, the first request of a document in the whole stream
    double fraction() const { return lookups > 0 ? double(compulsory) / double(lookups) : 0; }
};

// Document lookups of requests [first_measured, end) whose document no earlier request (warm-up
// included) asked for. `request_docs` holds the documents of each request in stream order; a
// document twice in one request counts once as compulsory.
CompulsoryMisses count_compulsory_misses(const std::vector<std::vector<int32_t>>& request_docs, int32_t first_measured);

// The steady-state window of a run: from the warmup-th completion (or from `start_s` when warmup
// is 0) to the last completion. `done_s` holds completion times in any order. 0 when nothing is
// measured.
double measured_span_s(std::vector<double> done_s, int32_t warmup, double start_s = 0);
// Completions per second in that window: (n - warmup) / measured_span_s; 0 when no time passed.
double steady_throughput(const std::vector<double>& done_s, int32_t warmup, double start_s = 0);

}  // namespace lazyattn::bench
