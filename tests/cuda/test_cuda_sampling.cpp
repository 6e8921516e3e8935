// Greedy argmax and top-k / top-p sampling on the device against a double-precision scalar
// reference of the same definition (sampling.h): candidates by logit descending then index,
// top-k, top-p over the top-k probabilities at temperature 1, then the first candidate at which
// the running weight exp((l - max) / T) reaches u * total.
//
// Tolerance: fp32 sums on the device (up to 128k terms) may move the top-p cut or the draw by
// ~1e-5 (relative), so the reference brackets the answer: the token must lie, in candidate order,
// between the picks with top_p and u both moved by -5e-5 and by +5e-5; a bracket holding more
// than 1e-3 of the probability fails the test as meaningless. Argmax and tie-breaking are exact.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "backend/cuda/sampling.h"
#include "cuda_test_util.h"
#include "op_cases.h"
#ifdef LA_CUDA_EMULATE
#include "support/cuda_emulator/cuda_emulator.h"
#endif

namespace lazyattn::cuda_test {
namespace {

double clean(float x) { return std::isnan(x) ? -std::numeric_limits<double>::infinity() : double(x); }

// The reference's decision, bracketed: fp32 sums on the device may move the top-p cut and the
// draw by a little, so the answer is any candidate between the pick with the cut at top_p - eps
// and the draw at u - eps, and the pick with both at + eps (the pick only moves later as either
// grows). Positions are in candidate order.
constexpr double kEps = 5e-5;

struct RefSample {
    std::vector<int32_t> order;  // candidates, logit descending then index ascending
    size_t lo, hi;               // bracket of positions, lo <= hi
    double inner_mass;           // probability of the candidates strictly inside the bracket
};

RefSample reference_sample(const float* logits, int32_t n, float temperature, int32_t top_k, float top_p, float u) {
    RefSample r{std::vector<int32_t>(n), 0, 0, 0.0};
    std::iota(r.order.begin(), r.order.end(), 0);
    std::stable_sort(r.order.begin(), r.order.end(),
                     [&](int32_t a, int32_t b) { return clean(logits[a]) > clean(logits[b]); });
    const double mx = clean(logits[r.order[0]]);
    if (!(temperature > 0.0f) || std::isinf(mx)) return r;
    const size_t keep_k = (top_k > 0 && top_k < n) ? size_t(top_k) : size_t(n);
    auto weight = [&](size_t i, double t) { return std::exp((clean(logits[r.order[i]]) - mx) / t); };
    auto cut = [&](double p) {  // top-p over the top-k set at temperature 1
        if (top_p >= 1.0f) return keep_k;
        double sum = 0.0, cum = 0.0;
        for (size_t i = 0; i < keep_k; ++i) sum += weight(i, 1.0);
        for (size_t i = 0; i < keep_k; ++i) {
            cum += weight(i, 1.0);
            if (cum / sum >= p) return i + 1;
        }
        return keep_k;
    };
    auto pick = [&](size_t keep, double draw) {
        double total = 0.0, cum = 0.0;
        for (size_t i = 0; i < keep; ++i) total += weight(i, temperature);
        for (size_t i = 0; i < keep; ++i) {
            cum += weight(i, temperature);
            if (cum >= draw * total) return i;
        }
        return keep - 1;
    };
    r.lo = pick(cut(double(top_p) - kEps), std::max(0.0, double(u) - kEps));
    const size_t keep_hi = cut(double(top_p) + kEps);
    r.hi = pick(keep_hi, std::min(1.0, double(u) + kEps));
    double total = 0.0, inner = 0.0;
    for (size_t i = 0; i < keep_hi; ++i) total += weight(i, temperature);
    for (size_t i = r.lo + 1; i < r.hi; ++i) inner += weight(i, temperature);
    r.inner_mass = inner / total;
    return r;
}

int32_t reference_argmax(const float* logits, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; ++i) {
        if (clean(logits[i]) > clean(logits[best])) best = i;
    }
    return best;
}

// Random logits with ties, a NaN and -inf entries.
std::vector<float> random_logits(std::mt19937_64& rng, int32_t rows, int32_t n, float sigma) {
    std::normal_distribution<float> dist(0.0f, sigma);
    std::vector<float> x(size_t(rows) * n);
    for (auto& v : x) v = dist(rng);
    for (int32_t r = 0; r < rows && n > 4; ++r) {
        float* row = x.data() + size_t(r) * n;
        const int32_t top = int32_t(std::max_element(row, row + n) - row);
        row[rng() % n] = row[top];  // a tie at the maximum
        row[rng() % n] = row[rng() % n];
        row[rng() % n] = -std::numeric_limits<float>::infinity();
        if (r % 3 == 1) row[rng() % n] = std::numeric_limits<float>::quiet_NaN();
    }
    return x;
}

TEST_F(CudaTest, ArgmaxIsFirstMaximum) {
    std::mt19937_64 rng(testing::test_seed() + 21);
    for (int32_t n : {1, 15, 1000, 128256}) {
        const int32_t rows = 17;
        std::vector<float> x = random_logits(rng, rows, n, 3.0f);
        for (int32_t i = 0; i < n; ++i) x[i] = -std::numeric_limits<float>::infinity();  // row 0: all -inf
        DeviceBuffer<float> dx(x);
        DeviceBuffer<int32_t> tokens(static_cast<size_t>(rows));
        LA_ASSERT_OK(backend().argmax(dx.get(), n, rows, n, tokens.get()));
        LA_ASSERT_OK(backend().synchronize());
        const std::vector<int32_t> got = tokens.download();
        for (int32_t r = 0; r < rows; ++r) {
            EXPECT_EQ(got[r], reference_argmax(x.data() + size_t(r) * n, n)) << "vocab " << n << " row " << r;
        }
    }
}

TEST_F(CudaTest, SampleMatchesReference) {
    std::mt19937_64 rng(testing::test_seed() + 22);
    const float temperatures[] = {0.0f, 0.7f, 1.0f, 1.5f};
    const float top_ps[] = {1.0f, 0.9f, 0.5f, 0.01f};
    int ambiguous = 0, total = 0;
    for (int32_t n : {15, 1000, 128256}) {
        const int32_t rows = 33;
        const int32_t top_ks[] = {0, 1, 5, 50, n};
        const std::vector<float> x = random_logits(rng, rows, n, n > 1000 ? 2.0f : 3.0f);
        std::vector<float> temp(rows), top_p(rows), uniform(rows);
        std::vector<int32_t> top_k(rows);
        std::uniform_real_distribution<float> u01(0.0f, 1.0f);
        for (int32_t r = 0; r < rows; ++r) {
            temp[r] = temperatures[r % 4];
            top_k[r] = top_ks[(r / 4) % 5];
            top_p[r] = top_ps[(r / 2 + r / 5) % 4];
            uniform[r] = r == 5 ? 0.0f : (r == 6 ? 0.99999f : u01(rng));
        }
        DeviceBuffer<float> dx(x), dt(temp), dp(top_p), du(uniform);
        DeviceBuffer<int32_t> dk(top_k), tokens(static_cast<size_t>(rows));
        LA_ASSERT_OK(backend().sample({dx.get(), n, rows, n, dt.get(), dk.get(), dp.get(), du.get(), tokens.get()}));
        LA_ASSERT_OK(backend().synchronize());
        const std::vector<int32_t> got = tokens.download();
        for (int32_t r = 0; r < rows; ++r) {
            const RefSample want =
                reference_sample(x.data() + size_t(r) * n, n, temp[r], top_k[r], top_p[r], uniform[r]);
            ++total;
            if (want.lo != want.hi) ++ambiguous;
            const auto pos = size_t(std::find(want.order.begin(), want.order.end(), got[r]) - want.order.begin());
            const std::string what = "vocab " + std::to_string(n) + " row " + std::to_string(r) + " T " +
                                     std::to_string(temp[r]) + " k " + std::to_string(top_k[r]) + " p " +
                                     std::to_string(top_p[r]) + " u " + std::to_string(uniform[r]);
            EXPECT_TRUE(pos >= want.lo && pos <= want.hi)
                << what << ": got token " << got[r] << " at candidate " << pos << ", want a candidate in [" << want.lo
                << ", " << want.hi << "] (token " << want.order[want.lo] << ")";
            EXPECT_LE(want.inner_mass, 1e-3) << what << ": bracket too wide to mean anything";
        }
    }
    std::printf("[sampling] %d of %d rows with a bracket wider than one token\n", ambiguous, total);
}

// The same logits and draws give the same tokens on every run: float atomics (whose order, hence
// rounded sum, varies between runs on a GPU) must not decide the pick. Draws sit right at the
// cumulative weight of a candidate, where a last-bit difference in a sum moves the pick. The
// emulator runs atomics in a random thread order and counts the float ones: none may happen.
TEST_F(CudaTest, SampleIsDeterministicForGivenDraws) {
    std::mt19937_64 rng(testing::test_seed() + 23);
    const int32_t n = 128256, rows = 24;
    std::vector<float> x = random_logits(rng, rows, n, 2.0f);
    std::vector<float> temp(rows, 1.0f), top_p(rows), uniform(rows);
    std::vector<int32_t> top_k(rows);
    for (int32_t r = 0; r < rows; ++r) {
        top_k[r] = r % 3 == 0 ? 0 : 40 + r;
        top_p[r] = r % 2 == 0 ? 1.0f : 0.9f;
        // u at the cumulative probability (temperature 1, no cuts) of the candidate ranked r.
        const float* row = x.data() + size_t(r) * n;
        std::vector<double> w(n);
        double mx = -std::numeric_limits<double>::infinity(), total = 0.0;
        for (int32_t i = 0; i < n; ++i) mx = std::max(mx, clean(row[i]));
        for (int32_t i = 0; i < n; ++i) total += w[i] = std::exp(clean(row[i]) - mx);
        std::vector<double> sorted = w;
        std::sort(sorted.begin(), sorted.end(), std::greater<>());
        double cum = 0.0;
        for (int32_t i = 0; i <= r; ++i) cum += sorted[i];
        uniform[r] = float(std::min(cum / total, 0.999));
    }
    DeviceBuffer<float> dx(x), dt(temp), dp(top_p), du(uniform);
    DeviceBuffer<int32_t> dk(top_k), tokens(static_cast<size_t>(rows));
#ifdef LA_CUDA_EMULATE
    const uint64_t float_atomics_before = emu::float_atomic_adds();
#endif
    std::vector<int32_t> first;
    for (int run = 0; run < 4; ++run) {
        LA_ASSERT_OK(backend().sample({dx.get(), n, rows, n, dt.get(), dk.get(), dp.get(), du.get(), tokens.get()}));
        LA_ASSERT_OK(backend().synchronize());
        const std::vector<int32_t> got = tokens.download();
        if (run == 0) {
            first = got;
        } else {
            EXPECT_EQ(got, first) << "run " << run << " picked other tokens than run 0";
        }
    }
#ifdef LA_CUDA_EMULATE
    EXPECT_EQ(emu::float_atomic_adds(), float_atomics_before) << "the sampling kernel used float atomics";
#endif
}

TEST_F(CudaTest, SampleBreaksTiesByIndex) {
    const int32_t n = 1000;
    std::vector<float> x(size_t(3) * n, 2.5f);  // three rows of equal logits
    const std::vector<float> temp = {1.0f, 1.0f, 0.5f}, top_p = {1.0f, 1.0f, 0.0015f}, uniform = {0.5f, 0.5f, 0.9f};
    const std::vector<int32_t> top_k = {3, 0, 0};
    DeviceBuffer<float> dx(x), dt(temp), dp(top_p), du(uniform);
    DeviceBuffer<int32_t> dk(top_k), tokens(3);
    LA_ASSERT_OK(backend().sample({dx.get(), n, 3, n, dt.get(), dk.get(), dp.get(), du.get(), tokens.get()}));
    LA_ASSERT_OK(backend().synchronize());
    const std::vector<int32_t> got = tokens.download();
    EXPECT_EQ(got[0], 1) << "top-3 of ties keeps indices 0, 1, 2; u = 0.5 picks the second";
    EXPECT_EQ(got[1], 499) << "1000 equal weights, u = 0.5: the 500th candidate";
    EXPECT_EQ(got[2], 1) << "top-p 0.0015 of 1000 ties keeps indices 0 and 1";
}

// Structured output's token mask on the device against its definition (kernels::ref), on the
// shapes every backend is checked on (op_cases.h), then greedy and sampled picks of the masked rows:
// always a token the grammar allows, the same one the host picks from the host-masked logits.
// Rows: everything allowed, nothing allowed, one token, one token in the last word, sparse, dense.
using testing::op_cases::TokenMaskShape;
class CudaTokenMaskTest : public CudaTest, public ::testing::WithParamInterface<TokenMaskShape> {};

TEST_P(CudaTokenMaskTest, MaskMatchesReferenceAndPicksStayInsideIt) {
    const auto [n, words] = GetParam();
    std::mt19937_64 rng(testing::test_seed() + 24 + n * 7 + words);
    const int32_t rows = 6;
    const std::vector<float> x = random_logits(rng, rows, n, 3.0f);
    std::vector<int32_t> mask(size_t(rows) * words, 0);
    auto allow = [&](int32_t r, int32_t i) {
        if (i / 32 < words) mask[size_t(r) * words + i / 32] |= int32_t(1u << (i % 32));
    };
    for (int32_t w = 0; w < words; ++w) mask[w] = -1;  // row 0: every bit set (padding too)
    allow(2, int32_t(rng() % n));
    allow(3, n - 1);  // past the mask when the mask is a word short: then nothing is allowed
    for (int32_t i = 0; i < n; ++i) {
        if (rng() % 97 == 0) allow(4, i);
        if (rng() % 4 != 0) allow(5, i);
    }
    DeviceBuffer<float> dx(x);
    DeviceBuffer<int32_t> dmask(mask);
    LA_ASSERT_OK(backend().apply_token_bitmask(dx.get(), n, rows, n, dmask.get(), words));
    LA_ASSERT_OK(backend().synchronize());
    std::vector<float> want = x;
    kernels::ref::apply_token_bitmask(want.data(), rows, n, mask.data(), words);
    const std::vector<float> got = dx.download();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {  // bit for bit: kept logits (NaN too) untouched
        ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
            << "row " << i / n << " token " << i % n << ": got " << got[i] << ", want " << want[i];
    }

    auto allowed = [&](int32_t r, int32_t t) {
        return t >= 0 && t < n && t / 32 < words && ((uint32_t(mask[size_t(r) * words + t / 32]) >> (t % 32)) & 1u);
    };
    DeviceBuffer<int32_t> greedy(static_cast<size_t>(rows)), sampled(static_cast<size_t>(rows));
    LA_ASSERT_OK(backend().argmax(dx.get(), n, rows, n, greedy.get()));
    const std::vector<float> temp(rows, 1.0f), top_p(rows, 1.0f);
    const std::vector<int32_t> top_k(rows, 0);
    std::vector<float> uniform(rows);
    for (float& u : uniform) u = float(rng() >> 40) * 0x1p-24f;
    DeviceBuffer<float> dt(temp), dp(top_p), du(uniform);
    DeviceBuffer<int32_t> dk(top_k);
    LA_ASSERT_OK(backend().sample({dx.get(), n, rows, n, dt.get(), dk.get(), dp.get(), du.get(), sampled.get()}));
    LA_ASSERT_OK(backend().synchronize());
    const std::vector<int32_t> g = greedy.download(), s = sampled.download();
    for (int32_t r = 0; r < rows; ++r) {
        const float* row = want.data() + size_t(r) * n;
        bool any = false;
        for (int32_t i = 0; i < n && !any; ++i) any = allowed(r, i) && !std::isnan(row[i]) && row[i] > -INFINITY;
        if (!any) continue;  // nothing to pick: the sampler's fallback (the stop token) decides there
        EXPECT_TRUE(allowed(r, g[r])) << "greedy row " << r << " picked token " << g[r] << ", masked";
        EXPECT_EQ(g[r], reference_argmax(row, n)) << "greedy row " << r;
        EXPECT_TRUE(allowed(r, s[r])) << "sampled row " << r << " picked token " << s[r] << ", masked";
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaTokenMaskTest, ::testing::ValuesIn(testing::op_cases::token_mask_shapes()),
                         [](const auto& info) { return testing::op_cases::name(info.param); });

}  // namespace
}  // namespace lazyattn::cuda_test
