// Per-token prefix reuse: a prompt that shares only the start of a cached block (a repeated prompt
// shorter than a block, the next turn of a chat that ends mid-block) has those rows copied from
// the cached block into its own fresh block (KvCache::match_partial, KvManager::match_tail) and
// counted as cached, the last prompt token still computed. The invariant: a request served with
// the copy answers as one computed from scratch (logprobs within 1e-4, absolute: the copied rows
// are the source's bytes, so only the last row's batch shape differs), in every cache mode that
// reuses a plain prompt and every KV dtype; the source block is never shared and may be evicted
// once the copy has run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/scheduler/scheduler.h"
#include "engine/sequence/sequence_state.h"
#include "reuse_fixture.h"

namespace lazyattn::engine {
namespace {

using reuse_testing::expect_pool_whole;
using reuse_testing::Tokens;

constexpr double kLogprobTol = 1e-4;

// head_dim 32: a KV row holds whole q8_0 / q4_0 groups, so every KV dtype runs.
LoadedModel& model() {
    static LoadedModel lm = [] {
        synthetic::SyntheticModelOptions o;
        o.seed = 7;
        o.head_dim = 32;
        auto loaded = load_model(testing::synthetic_model_path(o, "partial-hd32"), 2);
        EXPECT_TRUE(loaded.ok()) << loaded.status().to_string();
        return std::move(loaded).value();
    }();
    return lm;
}

std::unique_ptr<SyncEngine> engine_of(CacheMode mode, kernels::KvDtype dtype, int32_t num_blocks = 0) {
    EngineConfig c = reuse_testing::config(mode);
    c.kv_types = kernels::same_kv_types(dtype);
    if (num_blocks > 0) c.kv_num_blocks = num_blocks;
    return std::make_unique<SyncEngine>(*model().model, *model().tokenizer, c);
}

// A plain prompt (no documents), greedy, with each generated token's logprobs.
RagRequest plain(std::vector<int32_t> prompt, int32_t max_tokens = 6) {
    RagRequest r;
    r.tail = std::move(prompt);
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    r.sampling.logprobs = 5;
    return r;
}

// The same answer: tokens equal, every logprob (the chosen token's and the top 5) within kLogprobTol.
void expect_same_answer(const RagResult& got, const RagResult& want, const std::string& what) {
    EXPECT_EQ(got.token_ids, want.token_ids) << what;
    ASSERT_EQ(got.token_logprobs.size(), want.token_logprobs.size()) << what;
    for (size_t i = 0; i < want.token_logprobs.size(); ++i) {
        EXPECT_NEAR(got.token_logprobs[i], want.token_logprobs[i], kLogprobTol) << what << " token " << i;
        ASSERT_EQ(got.top_logprobs[i].size(), want.top_logprobs[i].size()) << what;
        for (size_t k = 0; k < want.top_logprobs[i].size(); ++k) {
            EXPECT_EQ(got.top_logprobs[i][k].first, want.top_logprobs[i][k].first) << what << " token " << i;
            EXPECT_NEAR(got.top_logprobs[i][k].second, want.top_logprobs[i][k].second, kLogprobTol) << what;
        }
    }
}

std::string name_of(CacheMode mode, kernels::KvDtype dtype) {
    return std::string(cache_mode_name(mode)) + "/" + kernels::kv_dtype_name(dtype);
}

const CacheMode kReusingModes[] = {CacheMode::kLazy, CacheMode::kLazyK, CacheMode::kBlockAttn, CacheMode::kPrefix};
const kernels::KvDtype kDtypes[] = {kernels::KvDtype::kF32, kernels::KvDtype::kF16, kernels::KvDtype::kQ8_0,
                                    kernels::KvDtype::kQ4_0};

// llama.cpp's test_metrics_prompt_processed_and_cached: a 9-token prompt asked twice. The second
// reuses 8 rows (copied from the first's partly filled block), computes the last, and answers as
// a fresh engine does; `none` reuses nothing.
TEST(PartialPrefixReuse, ARepeatedShortPromptCopiesAllButItsLastToken) {
    Tokens tokens(2001);
    const RagRequest req = plain(tokens.make(9));
    for (const CacheMode mode : kReusingModes) {
        for (const kernels::KvDtype dtype : kDtypes) {
            const std::string what = name_of(mode, dtype);
            auto warm = engine_of(mode, dtype);
            const auto first = warm->run(req);
            const auto second = warm->run(req);
            const auto fresh = engine_of(mode, dtype)->run(req);
            ASSERT_TRUE(first.ok() && second.ok() && fresh.ok()) << what << " " << first.status().to_string();
            EXPECT_EQ(first->stats.reused_tokens, 0) << what;
            EXPECT_EQ(second->stats.reused_tokens, 8) << what;
            EXPECT_EQ(second->stats.prefill_tokens, 1) << what;
            expect_same_answer(*second, *fresh, what);
            expect_same_answer(*first, *fresh, what);
            expect_pool_whole(*warm);
        }
    }
    auto none = engine_of(CacheMode::kNone, kernels::KvDtype::kF32);
    ASSERT_TRUE(none->run(req).ok());
    EXPECT_EQ(none->run(req)->stats.reused_tokens, 0);
}

// A chat's next turn repeats the previous prompt, which ended mid-block, and adds to it: the
// whole blocks are shared, the partial block's rows copied (the previous request's last block,
// its prompt rows); a prompt that leaves a full cached block mid-way copies the rows it shares.
TEST(PartialPrefixReuse, TheNextTurnReusesThePreviousPromptUpToMidBlock) {
    Tokens tokens(2002);
    for (const CacheMode mode : kReusingModes) {
        const std::string what = name_of(mode, kernels::KvDtype::kF32);
        auto warm = engine_of(mode, kernels::KvDtype::kF32);
        const auto turn1 = tokens.make(21);  // one block and 5 tokens
        ASSERT_TRUE(warm->run(plain(turn1)).ok());
        auto turn2 = turn1;
        for (int32_t t : tokens.make(12)) turn2.push_back(t);
        const auto next = warm->run(plain(turn2));
        ASSERT_TRUE(next.ok());
        EXPECT_EQ(next->stats.reused_tokens, 21) << what;
        expect_same_answer(*next, *engine_of(mode, kernels::KvDtype::kF32)->run(plain(turn2)), what);

        // 40 tokens cached (blocks [0, 16), [16, 32) whole); a prompt sharing the first 25 of
        // them, then going its own way: block 0 shared, 9 rows of block 1 copied.
        const auto long_prompt = tokens.make(40);
        ASSERT_TRUE(warm->run(plain(long_prompt)).ok());
        std::vector<int32_t> branch(long_prompt.begin(), long_prompt.begin() + 25);
        for (int32_t t : tokens.make(5)) branch.push_back(t);
        const auto branched = warm->run(plain(branch));
        ASSERT_TRUE(branched.ok());
        EXPECT_EQ(branched->stats.reused_tokens, 25) << what;
        expect_same_answer(*branched, *engine_of(mode, kernels::KvDtype::kF32)->run(plain(branch)), what);
        expect_pool_whole(*warm);
    }
}

// The copy's source is held only until the copy has run (the prompt is computed): then it may be
// evicted while the request that copied it still decodes, which reads its own block only.
TEST(PartialPrefixReuse, ACopiedSourceMayBeEvictedWhileTheCopyIsRead) {
    Tokens tokens(2003);
    const int32_t num_blocks = 8;
    auto e = engine_of(CacheMode::kLazy, kernels::KvDtype::kF32, num_blocks);
    const RagRequest a = plain(tokens.make(9), 1);
    ASSERT_TRUE(e->run(a).ok());  // its one block: cached, free
    kv::BlockId source = -1;
    for (kv::BlockId b = 0; b < num_blocks; ++b) {
        if (e->kv_cache().index().is_cached(b)) source = b;
    }
    ASSERT_GE(source, 0);
    RagRequest b = a;
    b.max_tokens = 6;  // 9 + 6 tokens: one block of its own
    auto handle = e->core().add(b);
    ASSERT_TRUE(handle.ok());
    const SequenceState* s = nullptr;
    for (int i = 0; i < 16; ++i) {
        e->core().step();
        s = e->scheduler().find((*handle)->id());
        if (s != nullptr && s->admitted && s->prompt_done()) break;
    }
    ASSERT_TRUE(s != nullptr && s->prompt_done());
    EXPECT_EQ(s->stats.reused_tokens, 8);
    EXPECT_EQ(s->kv.tail_copy_source, -1) << "the source is let go of once the prompt is computed";
    EXPECT_EQ(s->kv.held, std::vector<kv::BlockId>{s->kv.tail_blocks[0]}) << "b holds its own block only";
    EXPECT_NE(s->kv.tail_blocks[0], source);
    EXPECT_EQ(e->kv_cache().pool().ref_count(source), 0);

    // A request taking every other block evicts the source while b still decodes.
    const int32_t free_now = e->kv_cache().num_free();
    ASSERT_EQ(free_now, num_blocks - 1);
    auto filler = e->core().add(plain(tokens.make(16 * free_now - 8), 2));
    ASSERT_TRUE(filler.ok());
    bool evicted = false;
    while (e->core().step()) {
        const SequenceState* f = e->scheduler().find((*filler)->id());
        if (f != nullptr && f->admitted) {
            evicted |= std::find(f->kv.tail_blocks.begin(), f->kv.tail_blocks.end(), source) != f->kv.tail_blocks.end();
        }
    }
    EXPECT_TRUE(evicted) << "the filler was to take the source's block";
    const RagResult got = (*handle)->wait();
    ASSERT_EQ((*filler)->wait().finish_reason, FinishReason::kLength);
    EXPECT_EQ(got.finish_reason, FinishReason::kLength);
    expect_same_answer(got, *engine_of(CacheMode::kLazy, kernels::KvDtype::kF32)->run(b), "b after its source went");

    // Asked again, a finds what is left (b's own block, unless the filler took it too) or
    // nothing, and answers the same either way.
    const auto again = e->run(a);
    ASSERT_TRUE(again.ok());
    expect_same_answer(*again, *engine_of(CacheMode::kLazy, kernels::KvDtype::kF32)->run(a), "a again");
    expect_pool_whole(*e);
}

// A request refused room after matching (it waits) holds nothing meanwhile: the copy's source is
// let go of with its other references, and matched again when the request is admitted.
TEST(PartialPrefixReuse, AWaitingRequestHoldsNoSource) {
    Tokens tokens(2004);
    auto e = engine_of(CacheMode::kLazy, kernels::KvDtype::kF32, 4);
    const RagRequest a = plain(tokens.make(9), 1);
    ASSERT_TRUE(e->run(a).ok());
    // A long request takes the three other blocks; a's prompt again needs one fresh block beside
    // the source it copies from, so it waits until the long one ends.
    auto big = e->core().add(plain(tokens.make(40), 8));
    ASSERT_TRUE(big.ok());
    e->core().step();
    auto again = e->core().add(a);
    ASSERT_TRUE(again.ok());
    e->core().step();
    const SequenceState* waiting = e->scheduler().find((*again)->id());
    ASSERT_NE(waiting, nullptr);
    EXPECT_FALSE(waiting->admitted);
    EXPECT_TRUE(waiting->kv.held.empty());
    EXPECT_EQ(waiting->kv.tail_copy_source, -1);
    while (e->core().step()) {
    }
    const RagResult got = (*again)->wait();
    EXPECT_EQ(got.finish_reason, FinishReason::kLength);
    EXPECT_EQ(got.stats.reused_tokens, 8);
    expect_same_answer(got, *engine_of(CacheMode::kLazy, kernels::KvDtype::kF32)->run(a), "a after waiting");
    expect_pool_whole(*e);
}

}  // namespace
}  // namespace lazyattn::engine
