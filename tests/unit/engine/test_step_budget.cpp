// The step planner's prefill cap while requests decode (EngineConfig::max_prefill_while_decoding):
// no step that carries decode rows carries more prefill rows than the cap, yet neither side
// starves (every such step advances each decoder by one token and the waiting prefill by at
// least one row), and the cap changes only how work is split into steps, never the outputs.
#include <algorithm>
#include <random>
#include <vector>

#include "engine/scheduler/scheduler.h"
#include "random_inputs.h"
#include "scheduler_fixture.h"

namespace lazyattn::engine {
namespace {

using testing_support::config;
using testing_support::model;
using testing_support::random_tokens;

struct Trace {
    std::vector<std::vector<int32_t>> outputs;  // per request
    int32_t max_mixed_prefill = 0;              // most prefill rows in a step with decode rows
    int32_t max_prefill_only = 0;               // most rows in a step without decode rows
    int64_t mixed_steps = 0;
    int32_t longest_decode_gap = 0;  // steps a decoding request went without a decode row
    bool prefill_stalled = false;    // a step with decode rows while prefill waited, and none ran
    bool late_first_token_before_long_finished = false;
};

// One long-generating request, then (once it decodes) two requests whose documents and
// questions must be prefilled while it runs.
Trace run(int32_t cap) {
    std::mt19937_64 rng(testing::test_seed() + 910);
    RagRequest longer;
    longer.segments = {random_tokens(rng, 20)};
    longer.tail = random_tokens(rng, 4);
    longer.max_tokens = 80;
    longer.ignore_eos = true;
    std::vector<RagRequest> late;
    for (int i = 0; i < 2; ++i) {
        RagRequest r;
        r.segments = {random_tokens(rng, 70), random_tokens(rng, 45)};
        r.tail = random_tokens(rng, 11);
        r.max_tokens = 5;
        r.ignore_eos = true;
        late.push_back(std::move(r));
    }

    EngineConfig c = config(CacheMode::kLazy, 8, 64);
    c.max_prefill_while_decoding = cap;
    EngineCore s(*model().model, *model().tokenizer, c);
    Trace t;
    std::vector<std::shared_ptr<RequestHandle>> handles{*s.add(longer)};
    while (s.scheduler().find(handles[0]->id())->num_generated == 0) s.step();
    for (const auto& r : late) handles.push_back(*s.add(r));
    std::vector<int32_t> last_generated(handles.size(), 0), gap(handles.size(), 0);
    while (!s.idle()) {
        const SchedulerStats before = s.scheduler().stats();
        // Whether prefill work waits (a late request admitted or queued with its prompt not done).
        bool prefill_waiting = false;
        for (size_t i = 1; i < handles.size(); ++i) {
            const SequenceState* st = s.scheduler().find(handles[i]->id());
            prefill_waiting |= st != nullptr && st->num_generated == 0;
        }
        s.step();
        const SchedulerStats after = s.scheduler().stats();
        const int64_t mixed_rows = after.mixed.prefill_rows - before.mixed.prefill_rows;
        const int64_t prefill_only_rows = after.prefill_only.prefill_rows - before.prefill_only.prefill_rows;
        if (after.mixed.steps > before.mixed.steps) {
            ++t.mixed_steps;
            t.max_mixed_prefill = std::max(t.max_mixed_prefill, int32_t(mixed_rows));
        }
        if (after.prefill_only.steps > before.prefill_only.steps) {
            t.max_prefill_only = std::max(t.max_prefill_only, int32_t(prefill_only_rows));
        }
        const bool decoded =
            after.decode_only.steps + after.mixed.steps > before.decode_only.steps + before.mixed.steps;
        if (decoded && prefill_waiting && mixed_rows == 0) t.prefill_stalled = true;
        for (size_t i = 0; i < handles.size(); ++i) {
            const SequenceState* st = s.scheduler().find(handles[i]->id());
            if (st == nullptr || st->num_generated == 0) continue;
            gap[i] = st->num_generated > last_generated[i] ? 0 : gap[i] + 1;
            last_generated[i] = st->num_generated;
            t.longest_decode_gap = std::max(t.longest_decode_gap, gap[i]);
        }
        if (!handles[0]->finished()) {
            for (size_t i = 1; i < handles.size(); ++i) {
                t.late_first_token_before_long_finished |= handles[i]->finished();
            }
        }
    }
    for (auto& h : handles) {
        const RagResult r = h->wait();
        EXPECT_EQ(r.finish_reason, engine::FinishReason::kLength);
        t.outputs.push_back(r.token_ids);
    }
    s.scheduler().check_integrity();
    return t;
}

TEST(StepBudget, StepsWithDecodeRowsCarryAtMostTheCapAndNeitherSideStarves) {
    const Trace capped = run(8);
    EXPECT_GT(capped.mixed_steps, 0);
    EXPECT_LE(capped.max_mixed_prefill, 8);
    EXPECT_LE(capped.max_prefill_only, 64);   // steps without decoders still take the whole budget
    EXPECT_EQ(capped.longest_decode_gap, 0);  // every step advanced every decoding request
    EXPECT_FALSE(capped.prefill_stalled);
    // The late requests' 126-token prompts finish within the long one's 80 tokens: the cap slows
    // prefill while others decode but never stops it.
    EXPECT_TRUE(capped.late_first_token_before_long_finished);
}

TEST(StepBudget, WithoutTheCapPrefillFillsTheStepAndOutputsAreTheSame) {
    const Trace capped = run(8);
    const Trace uncapped = run(0);
    EXPECT_GT(uncapped.max_mixed_prefill, 8);  // the test above would see a cap that did nothing
    EXPECT_LE(uncapped.max_mixed_prefill, 64);
    EXPECT_EQ(capped.outputs, uncapped.outputs);
}

TEST(StepBudget, ANegativeCapIsRefused) {
    EngineConfig c = config(CacheMode::kLazy, 8);
    c.max_prefill_while_decoding = -1;
    EXPECT_EQ(c.validate().code(), StatusCode::kInvalidArgument);
    c.max_prefill_while_decoding = 0;
    EXPECT_TRUE(c.validate().ok());
}

}  // namespace
}  // namespace lazyattn::engine
