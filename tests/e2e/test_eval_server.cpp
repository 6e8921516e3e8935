// An lm-evaluation-harness style loglikelihood request (completions with echo, logprobs and
// max_tokens 0, the prompt given as token ids) against a real `lazyattn serve` on the embedded
// SmolLM2, checked against a direct forward pass in this process: log-softmax of the logits at
// every prompt position.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/request/token_logprobs.h"
#include "engine/sync_engine.h"
#include "real_model_fixture.h"
#include "server/server_process.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

TEST(EvalServer, LoglikelihoodRequestMatchesADirectForwardPass) {
    LA_REQUIRE_REAL_MODEL();
    const engine::LoadedModel& lm = *real_model();
    const std::string context = "The capital of France is", continuation = " Paris, a city on the Seine.";
    const std::vector<int32_t> ids = lm.tokenizer->encode(context + continuation, false, false);

    ServerProcess s({"--model", LAZYATTN_MODEL_PATH, "--kv-cache-mb", "64", "--threads", "2"});
    ASSERT_TRUE(s.started()) << s.log();
    const json body = {{"prompt", ids}, {"max_tokens", 0}, {"echo", true}, {"logprobs", 1}, {"temperature", 0}};
    auto r = curl("POST", s.url("/v1/completions"), body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const json lp = json::parse(r.body)["choices"][0]["logprobs"];
    const json& served = lp["token_logprobs"];

    // The same tail, run directly: row i's logits predict tail token i + 1.
    engine::EngineConfig c;
    c.kv_cache_mb = 64;
    engine::SyncEngine direct(*lm.model, *lm.tokenizer, c);
    engine::RagRequest req;
    if (lm.tokenizer->add_bos()) req.tail.push_back(lm.tokenizer->bos_id());
    req.tail.insert(req.tail.end(), ids.begin(), ids.end());
    ASSERT_EQ(served.size(), req.tail.size()) << lp.dump();
    auto logits = direct.tail_logits(req);
    ASSERT_TRUE(logits.ok()) << logits.status().to_string();
    const int32_t vocab = lm.model->config().vocab_size;
    EXPECT_TRUE(served[0].is_null());
    double served_sum = 0, direct_sum = 0;
    const size_t context_tokens = req.tail.size() - lm.tokenizer->encode(continuation, false, false).size();
    for (size_t i = 1; i < req.tail.size(); ++i) {
        const float* row = logits->data() + (i - 1) * size_t(vocab);
        const double want = double(row[req.tail[i]]) - engine::log_sum_exp(row, vocab);
        ASSERT_TRUE(served[i].is_number()) << i;
        EXPECT_NEAR(served[i].get<double>(), want, 2e-3) << "token " << i;
        if (i >= context_tokens) {  // the continuation's loglikelihood, as lm-eval sums it
            served_sum += served[i].get<double>();
            direct_sum += want;
        }
    }
    EXPECT_NEAR(served_sum, direct_sum, 1e-2);
    EXPECT_LT(served_sum, 0);
}

}  // namespace
}  // namespace lazyattn::testing
