// lazyattn against llama.cpp on the real SmolLM2 model, from the golden files that
// scripts/make_golden.py writes with llama-cpp-python. Both engines quantize activations to 8 bits
// for the Q4_1/Q8_0 matmuls, but llama.cpp also keeps K, V, the query and the attention weights
// in fp16 where lazyattn keeps fp32, and sums in another order; through 30 layers of a 4-bit
// model that noise reaches the logits. How much is the reference's own noise: llama.cpp
// against itself (n_batch 1 vs 512, same file, same threads) gives a worst top-20 cosine of
// 0.991 (p1 0.9974), flips the top-1 token at 14 of 599 positions with margins up to 0.234, and
// greedy continuations that part at a near-tie in 1 of 8 prompts. The bars below sit at that
// noise level, not at bit equality:
//   - top-20 cosine >= 0.999 at 97% of positions and >= 0.98 at every position;
//   - the same top-1 wherever llama.cpp's margin exceeds 0.75 (3x its own largest flip), and at >= 97% of positions where
//     it exceeds 0.05;
//   - greedy continuations identical up to the first step where llama.cpp's own top-1 margin is
//     below 0.3 (a near-tie either engine may break either way).
#include <algorithm>
#include <cmath>

#include "engine/sync_engine.h"
#include "real_model_fixture.h"
#include "tokenizer/chat_template.h"

namespace lazyattn {
namespace {

// Every KV element type meets the same bars (the default f16 is what llama.cpp itself stores).
class GoldenLlamaCpp : public ::testing::TestWithParam<kernels::KvDtype> {
protected:
    engine::EngineConfig config() const {
        engine::EngineConfig c;
        c.kv_types = kernels::same_kv_types(GetParam());
        return c;
    }
    const char* dtype() const { return kernels::kv_dtype_name(GetParam()); }
};

TEST_P(GoldenLlamaCpp, LogitsAtEveryPosition) {
    LA_REQUIRE_REAL_MODEL();
    auto* lm = testing::real_model();
    const auto golden = testing::load_golden("golden_logits.json");
    engine::SyncEngine gen(*lm->model, *lm->tokenizer, config());
    const int32_t vocab = lm->model->config().vocab_size;
    double worst_cosine = 1.0;
    std::vector<double> cosines;
    int positions = 0, clear_positions = 0, top1_agree = 0;
    for (const auto& prompt : golden["prompts"]) {
        const auto ids = prompt["ids"].get<std::vector<int32_t>>();
        engine::RagRequest req;
        req.tail = ids;
        auto logits = gen.tail_logits(req);
        ASSERT_TRUE(logits.ok()) << logits.status().to_string();
        const auto& top = prompt["top"];
        ASSERT_EQ(top.size(), ids.size());
        for (size_t i = 0; i < ids.size(); ++i) {
            const float* ours = logits->data() + i * vocab;
            double dot = 0, na = 0, nb = 0;
            for (const auto& pair : top[i]) {
                const double theirs = pair[1].get<double>(), mine = ours[pair[0].get<int32_t>()];
                dot += theirs * mine;
                na += theirs * theirs;
                nb += mine * mine;
            }
            const double cosine = dot / std::sqrt(na * nb);
            worst_cosine = std::min(worst_cosine, cosine);
            cosines.push_back(cosine);
            EXPECT_GE(cosine, 0.98) << prompt["name"] << " position " << i;
            ++positions;
            const double margin = top[i][0][1].get<double>() - top[i][1][1].get<double>();
            if (margin > 0.05) {
                ++clear_positions;
                const int32_t mine = int32_t(std::max_element(ours, ours + vocab) - ours);
                top1_agree += mine == top[i][0][0].get<int32_t>();
                if (margin > 0.75) {
                    EXPECT_EQ(mine, top[i][0][0].get<int32_t>())
                        << prompt["name"] << " position " << i << " (llama.cpp margin " << margin << ")";
                }
            }
        }
    }
    std::sort(cosines.begin(), cosines.end());
    const auto below = std::lower_bound(cosines.begin(), cosines.end(), 0.999) - cosines.begin();
    EXPECT_LE(double(below), 0.03 * cosines.size()) << below << " positions below cosine 0.999";
    EXPECT_GE(double(top1_agree), 0.97 * clear_positions);
    std::printf("[golden logits, kv %s] top-20 cosine percentiles: p1 %.6f  p10 %.6f  p50 %.6f\n", dtype(),
                cosines[cosines.size() / 100], cosines[cosines.size() / 10], cosines[cosines.size() / 2]);
    std::printf(
        "[golden logits, kv %s] %d positions, worst top-20 cosine %.6f, top-1 agrees at %d of %d clear positions\n",
        dtype(), positions, worst_cosine, top1_agree, clear_positions);
}

TEST_P(GoldenLlamaCpp, GreedyContinuations) {
    LA_REQUIRE_REAL_MODEL();
    auto* lm = testing::real_model();
    const auto golden = testing::load_golden("golden_greedy.json");
    engine::SyncEngine gen(*lm->model, *lm->tokenizer, config());
    int identical = 0, total = 0;
    for (const auto& c : golden["cases"]) {
        engine::RagRequest req;
        req.tail = c["prompt_ids"].get<std::vector<int32_t>>();
        req.max_tokens = golden["max_new_tokens"].get<int32_t>();
        auto r = gen.run(req);
        ASSERT_TRUE(r.ok()) << r.status().to_string();
        auto ours = r->token_ids;
        if (!ours.empty() && lm->tokenizer->is_end_of_generation(ours.back())) ours.pop_back();
        const auto theirs = c["output_ids"].get<std::vector<int32_t>>();
        const size_t first_diff =
            std::mismatch(ours.begin(), ours.end(), theirs.begin(), theirs.end()).first - ours.begin();
        ++total;
        identical += ours == theirs;
        const auto margins_at = c["top1_margin"].get<std::vector<double>>();
        size_t first_near_tie = theirs.size();
        for (size_t i = 0; i < margins_at.size() && i < theirs.size(); ++i) {
            if (margins_at[i] < 0.3) {
                first_near_tie = i;
                break;
            }
        }
        EXPECT_GE(first_diff, first_near_tie) << "diverged before llama.cpp's first near-tie";
        std::string label = c["prompt"].get<std::string>();
        label = label.substr(label.size() > 40 ? label.size() - 40 : 0);
        std::replace(label.begin(), label.end(), '\n', ' ');
        const auto margins = c["top1_margin"].get<std::vector<double>>();
        std::printf("[golden greedy, kv %s] %-4s ...%-40.40s %s", dtype(), c["kind"].get<std::string>().c_str(),
                    label.c_str(), ours == theirs ? "identical\n" : "differs");
        if (ours != theirs) {
            std::printf(" at step %zu of %zu (llama.cpp's top-1 margin there %.3f)\n", first_diff, theirs.size(),
                        first_diff < margins.size() ? margins[first_diff] : -1.0);
        }
    }
    std::printf("[golden greedy, kv %s] %d of %d continuations identical for all %d tokens\n", dtype(), identical,
                total, golden["max_new_tokens"].get<int>());
    EXPECT_EQ(lm->model->config().vocab_size, lm->tokenizer->vocab_size());
    EXPECT_EQ(gen.kv_cache().num_free(), gen.kv_cache().pool().num_blocks());
}

INSTANTIATE_TEST_SUITE_P(KvDtypes, GoldenLlamaCpp,
                         ::testing::Values(kernels::KvDtype::kF16, kernels::KvDtype::kF32, kernels::KvDtype::kBF16),
                         [](const auto& info) { return std::string(kernels::kv_dtype_name(info.param)); });

TEST(GoldenLlamaCppTemplates, ChatPromptsRenderAndTokenizeIdentically) {
    LA_REQUIRE_REAL_MODEL();
    auto* lm = testing::real_model();
    const auto golden = testing::load_golden("golden_greedy.json");
    auto tmpl = tokenizer::chat_template_from_jinja(*lm->model->gguf().get_string("tokenizer.chat_template"));
    ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
    int chats = 0;
    for (const auto& c : golden["cases"]) {
        if (c["kind"] != "chat") continue;
        ++chats;
        std::vector<tokenizer::ChatMessage> messages;
        for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
        const auto rendered = tmpl->apply(messages, true);
        ASSERT_TRUE(rendered.ok()) << rendered.status().to_string();
        const std::string& text = *rendered;
        EXPECT_EQ(text, c["prompt"].get<std::string>());
        EXPECT_EQ(lm->tokenizer->encode(text, true, true), c["prompt_ids"].get<std::vector<int32_t>>());
    }
    EXPECT_EQ(chats, 4);
}

}  // namespace
}  // namespace lazyattn
