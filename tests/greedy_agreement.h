// Greedy outputs of two computations that agree only up to rounding (a bf16 GPU against the CPU,
// or one GPU backend at two batch shapes, whose GEMMs then round differently) may part at a near
// tie: where the reference's logits of the two tokens are closer than that rounding can move
// them, either token is a correct argmax, and the sequences legitimately differ after it. This
// check accepts exactly that: equal tokens up to the first difference, and there a gap in the
// reference's own logits that the stated per-logit tolerance explains. Anything else fails.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/sync_engine.h"

namespace lazyattn::testing {

// The per-logit tolerance of the bf16 CUDA backend against a reference, whether the CPU engine
// or itself at another batch shape (|a - b| <= kBf16LogitTol * max(|b|, 1)): one number for the
// logits tests and the near-tie rule below.
constexpr double kBf16LogitTol = 5e-2;

// `want` are the greedy tokens `reference` (a model of `vocab_size` tokens) generated for
// `request`; `got` another computation's.
// `rel_tol` is the per-logit tolerance the two computations are held to elsewhere
// (|a - b| <= rel_tol * max(|b|, 1)), so two logits closer than the sum of theirs are a tie.
inline void expect_greedy_equal_up_to_a_near_tie(engine::SyncEngine& reference, int32_t vocab_size,
                                                 const engine::RagRequest& request, const std::vector<int32_t>& want,
                                                 const std::vector<int32_t>& got, double rel_tol,
                                                 const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    size_t i = 0;
    while (i < want.size() && want[i] == got[i]) ++i;
    if (i == want.size()) return;
    engine::RagRequest prefix = request;  // the reference's logits where the outputs part
    prefix.tail.insert(prefix.tail.end(), want.begin(), want.begin() + std::ptrdiff_t(i));
    auto logits = reference.tail_logits(prefix);
    ASSERT_TRUE(logits.ok()) << what << ": " << logits.status().to_string();
    ASSERT_GE(logits->size(), size_t(vocab_size)) << what;
    const float* last = logits->data() + (logits->size() - size_t(vocab_size));  // the last prompt row's
    const double a = last[want[i]], b = last[got[i]];
    const double allowed = rel_tol * (std::max(std::fabs(a), 1.0) + std::max(std::fabs(b), 1.0));
    EXPECT_LE(a - b, allowed) << what << ": the outputs part at generated token " << i << " (" << want[i] << " vs "
                              << got[i] << ") where the reference's logits differ by " << (a - b)
                              << ", more than rounding within the tolerance explains (" << allowed << ")";
    std::printf("[near tie] %s: outputs part at generated token %zu, logit gap %.3g <= %.3g\n", what.c_str(), i, a - b,
                allowed);
}

}  // namespace lazyattn::testing
