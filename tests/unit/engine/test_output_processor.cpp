// OutputProcessor: what a sampled token means as text. End of generation, stop strings (the
// text before one, nothing held back past the end), and "length", over a byte vocabulary, with
// no scheduler or model: the policy tests (policy_harness.h) cover when tokens are sampled.
#include "engine/output/output_processor.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "engine/sequence/request_output.h"
#include "engine/sequence/sequence_state.h"
#include "test_vocab_builder.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::engine {
namespace {

constexpr int32_t kEos = 256;

// 256 byte tokens and one end-of-generation token.
const tokenizer::Tokenizer& byte_tokenizer() {
    static const std::unique_ptr<tokenizer::Tokenizer> tok = [] {
        auto d = tokenizer::testing_support::make_byte_vocab({{"<eos>", tokenizer::TokenType::kControl}}, {"a b"});
        d.eos_id = kEos;
        auto tok = tokenizer::Tokenizer::from_vocab(d);
        LA_CHECK_MSG(tok.ok(), "%s", tok.status().to_string().c_str());
        return std::move(tok).value();
    }();
    return *tok;
}

// Feeds `tokens` to the OutputProcessor as the Scheduler's update and EngineCore's apply_step
// would (each one counted and queued in the tail first), until one finishes the request.
RagResult generate(RagRequest request, const std::vector<int32_t>& tokens, int32_t context_length = 4096) {
    OutputProcessor outputs(byte_tokenizer(), context_length);
    SequenceState s;
    s.request = std::move(request);
    s.handle = std::make_shared<RequestHandle>(1);
    s.kv.tail_start = 10;  // a prompt of 10 positions
    for (const int32_t token : tokens) {
        ++s.num_generated;
        s.kv.tail_tokens.push_back(token);
        const FinishReason reason = outputs.on_token(s, token, nullptr);
        if (reason == FinishReason::kNone) continue;
        outputs.flush(s);
        s.handle->finish(reason, {});
        break;
    }
    if (!s.handle->finished()) s.handle->finish(FinishReason::kNone, {});  // the script ran out
    return s.handle->wait();
}

RagRequest request_of(int32_t max_tokens, std::vector<std::string> stops = {}) {
    RagRequest r;
    r.max_tokens = max_tokens;
    r.stop = make_stop_strings(std::move(stops));
    return r;
}

std::vector<int32_t> bytes(const std::string& text) { return {text.begin(), text.end()}; }

TEST(OutputProcessor, EndOfGenerationStopsUnlessIgnored) {
    RagResult r = generate(request_of(20), {'x', 'y', 'z', kEos, 'w'});
    EXPECT_EQ(r.finish_reason, engine::FinishReason::kStop);
    EXPECT_EQ(r.text, "xyz");
    EXPECT_EQ(r.stop_word, "") << "an end-of-generation token is no stop string";
    EXPECT_EQ(r.token_ids, (std::vector<int32_t>{'x', 'y', 'z', kEos}));
    RagRequest ignore = request_of(5);
    ignore.ignore_eos = true;
    r = generate(ignore, {'x', kEos, 'y', 'z', 'w', 'v'});
    EXPECT_EQ(r.finish_reason, engine::FinishReason::kLength);
    EXPECT_EQ(r.token_ids.size(), 5u);
}

TEST(OutputProcessor, AStopStringEndsTheTextBeforeItAndHoldsNothingBack) {
    RagResult r = generate(request_of(20, {"yz"}), bytes("xyzw"));
    EXPECT_EQ(r.finish_reason, engine::FinishReason::kStop);
    EXPECT_EQ(r.text, "x") << "the text before the stop string, nothing held back";
    EXPECT_EQ(r.stop_word, "yz");
    // A possible start of a stop string ("y") is held back while it may still match, and
    // released when the request ends another way.
    r = generate(request_of(2, {"yz"}), bytes("xy"));
    EXPECT_EQ(r.finish_reason, engine::FinishReason::kLength);
    EXPECT_EQ(r.text, "xy");
    // A stop string across tokens of several bytes' text.
    r = generate(request_of(20, {"lo w"}), bytes("hello world"));
    EXPECT_EQ(r.finish_reason, engine::FinishReason::kStop);
    EXPECT_EQ(r.text, "hel");
    EXPECT_EQ(r.stop_word, "lo w");
    // Of two stop strings, the one that begins first in the text is the one named.
    r = generate(request_of(20, {"world", "lo"}), bytes("hello world"));
    EXPECT_EQ(r.text, "hel");
    EXPECT_EQ(r.stop_word, "lo");
}

TEST(OutputProcessor, TheContextsLastPositionEndsWithLength) {
    // The prompt holds positions 0..9 and generated token k sits at 9 + k: with a context of 14
    // the 5th, sampled from position 13's logits, has no position left to be computed at.
    const RagResult r = generate(request_of(100), bytes("abcdefgh"), /*context_length=*/14);
    EXPECT_EQ(r.finish_reason, engine::FinishReason::kLength);
    EXPECT_EQ(r.text, "abcde");
}

}  // namespace
}  // namespace lazyattn::engine
