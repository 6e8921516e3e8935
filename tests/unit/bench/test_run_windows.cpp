// bench rag's --windows report (cli::run_windows) on a hand-made run whose every figure is known:
// requests counted by submission, completions by completion, TTFT and TPOT per span, conditioned
// copies served, and background rows by when they were computed (the warm-up's in no span).
#include <gtest/gtest.h>

#include "bench/rag_runner.h"
#include "cli/bench_rag_report.h"

namespace lazyattn::cli {
namespace {

TEST(RunWindows, EachFigureFallsInTheSpanOfItsTime) {
    bench::RunResult r;
    // Four measured requests from t = 10 s to the last completion at t = 30 s: two spans of 10 s.
    r.submitted_s = {10, 12, 21, 25};
    r.completed_s = {11, 22, 24, 30};
    r.ttft_ms = {100, 300, 50, 70};
    r.tpot_ms = {10, 0, 30, 20};  // the second generated one token: no time per output token
    r.conditioned_lookups = {2, 2, 2, 2};
    r.conditioned_served = {0, 1, 2, 2};
    // Cumulative background rows: 64 in the warm-up (t = 5), 128 more by t = 15, 32 more at t = 29.
    r.background_rows_at = {{5, 64}, {15, 192}, {29, 224}};
    const auto w = run_windows(r, 2);
    ASSERT_EQ(w.size(), 2u);
    EXPECT_DOUBLE_EQ(w[0].start_s, 10);
    EXPECT_DOUBLE_EQ(w[0].end_s, 20);
    EXPECT_DOUBLE_EQ(w[1].end_s, 30);
    EXPECT_EQ(w[0].requests, 2);
    EXPECT_EQ(w[1].requests, 2);
    EXPECT_DOUBLE_EQ(w[0].conditioned_share(), 0.25);
    EXPECT_DOUBLE_EQ(w[1].conditioned_share(), 1.0);
    EXPECT_DOUBLE_EQ(w[0].completed_per_s, 0.1);  // one completion (t = 11) in 10 s
    EXPECT_DOUBLE_EQ(w[1].completed_per_s, 0.3);  // t = 22, 24 and 30 (the end falls in the last span)
    EXPECT_DOUBLE_EQ(w[0].ttft_p50_ms, 200);
    EXPECT_DOUBLE_EQ(w[1].ttft_p50_ms, 60);
    EXPECT_DOUBLE_EQ(w[0].tpot_p50_ms, 10);  // the one-token request has none
    EXPECT_DOUBLE_EQ(w[1].tpot_p50_ms, 25);
    EXPECT_EQ(w[0].background_rows, 128);
    EXPECT_EQ(w[1].background_rows, 32);
}

TEST(RunWindows, NoneForAnEmptyRunOrNoSpans) {
    bench::RunResult r;
    EXPECT_TRUE(run_windows(r, 3).empty());
    r.submitted_s = {1};
    r.completed_s = {2};
    r.ttft_ms = {5};
    EXPECT_TRUE(run_windows(r, 0).empty());
    ASSERT_EQ(run_windows(r, 1).size(), 1u);
    EXPECT_EQ(run_windows(r, 1)[0].background_rows, 0);
}

}  // namespace
}  // namespace lazyattn::cli
