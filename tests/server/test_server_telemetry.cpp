// llama-server's telemetry over a real socket: prompt_progress (return_progress) reported from
// the engine's prefill, `timings` on streamed chunks (timings_per_token), the `__verbose` object
// (--verbose, or the request's `verbose`), and post_sampling_probs on the native API.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

// A prompt of many tokens: several prefill batches at --batch-size 16.
std::string long_text() {
    std::string s;
    for (int i = 0; i < 12; ++i) s += "the quick brown fox jumps over the lazy dog. ";
    return s;
}

std::vector<json> stream_chunks(const ServerProcess& s, const std::string& path, const json& body) {
    const auto r = curl("POST", s.url(path), body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    std::vector<json> out;
    for (const std::string& p : sse_payloads(r.body)) {
        if (p != "[DONE]") out.push_back(parse_or_null(p));
    }
    return out;
}

// The progress chunks say what llama-server's do: the first at admission (nothing computed:
// processed == cache, prompt_ms 0), processed rising strictly to the whole prompt, every one
// before the first generated text; the time never goes back.
void expect_progress(const std::vector<json>& progress, size_t min_reports) {
    ASSERT_GE(progress.size(), min_reports);
    const json& first = progress.front()["prompt_progress"];
    EXPECT_EQ(first["processed"], first["cache"]) << first;
    EXPECT_EQ(first["time_ms"].get<double>(), 0.0) << first;
    EXPECT_GT(first["total"].get<int>(), 0);
    for (size_t i = 1; i < progress.size(); ++i) {
        const json& prev = progress[i - 1]["prompt_progress"];
        const json& cur = progress[i]["prompt_progress"];
        EXPECT_EQ(cur["total"], prev["total"]);
        EXPECT_EQ(cur["cache"], prev["cache"]);
        EXPECT_GT(cur["processed"].get<int>(), prev["processed"].get<int>()) << cur;
        EXPECT_GE(cur["time_ms"].get<double>(), prev["time_ms"].get<double>()) << cur;
    }
    const json& last = progress.back()["prompt_progress"];
    EXPECT_EQ(last["processed"], last["total"]) << last;
    EXPECT_GT(last["time_ms"].get<double>(), 0.0);
}

TEST(ServerTelemetry, ChatStreamReportsPrefillProgressAndTimings) {
    ServerProcess s(server_args({"--batch-size", "16"}));
    ASSERT_TRUE(s.started()) << s.log();
    json body = {{"messages", {{{"role", "user"}, {"content", long_text()}}}},
                 {"max_tokens", 5},
                 {"temperature", 0},
                 {"ignore_eos", true},
                 {"stream", true},
                 {"stream_options", {{"include_usage", true}}},
                 {"return_progress", true},
                 {"timings_per_token", true}};
    const auto chunks = stream_chunks(s, "/v1/chat/completions", body);
    ASSERT_FALSE(chunks.empty());
    EXPECT_FALSE(chunks.front().contains("timings")) << chunks.front();  // the role chunk
    std::vector<json> progress;
    bool text_seen = false;
    int predicted = 0;
    json usage;
    for (const json& c : chunks) {
        if (c.contains("prompt_progress")) {
            EXPECT_FALSE(text_seen) << "progress after the first text: " << c;
            EXPECT_EQ(c["choices"][0]["delta"]["role"], "assistant");
            EXPECT_EQ(c["timings"]["prompt_n"].get<int>() + c["timings"]["cache_n"].get<int>(),
                      c["prompt_progress"]["processed"].get<int>());
            progress.push_back(c);
        } else if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content") &&
                   c["choices"][0]["delta"]["content"].is_string()) {
            text_seen = true;
            ASSERT_TRUE(c.contains("timings")) << c;
            // Tokens, not chunks: held-back text goes out with a later token.
            EXPECT_GE(c["timings"]["predicted_n"].get<int>(), std::max(1, predicted)) << c;
            EXPECT_LE(c["timings"]["predicted_n"].get<int>(), 5) << c;
            predicted = c["timings"]["predicted_n"];
        } else if (c["choices"].empty()) {
            usage = c;
        }
    }
    expect_progress(progress, 3);  // admission + several batches of 16
    EXPECT_GE(progress.back()["prompt_progress"]["total"].get<int>(), 48);
    ASSERT_TRUE(usage.contains("timings")) << usage;
    EXPECT_EQ(usage["timings"]["predicted_n"], 5);
    EXPECT_EQ(usage["timings"]["prompt_n"].get<int>() + usage["timings"]["cache_n"].get<int>(),
              usage["usage"]["prompt_tokens"].get<int>());
    EXPECT_GT(usage["timings"]["prompt_per_second"].get<double>(), 0.0);
    EXPECT_GT(usage["timings"]["predicted_per_second"].get<double>(), 0.0);

    // Not asked for: neither.
    body.erase("return_progress");
    body.erase("timings_per_token");
    for (const json& c : stream_chunks(s, "/v1/chat/completions", body)) {
        EXPECT_FALSE(c.contains("prompt_progress")) << c;
        EXPECT_FALSE(c.contains("timings")) << c;
    }
    // The same prompt again: its tail comes from the cache, which the first report says.
    body["return_progress"] = true;
    std::vector<json> again;
    for (const json& c : stream_chunks(s, "/v1/chat/completions", body)) {
        if (c.contains("prompt_progress")) again.push_back(c);
    }
    expect_progress(again, 2);
    EXPECT_GT(again.front()["prompt_progress"]["cache"].get<int>(), 0) << again.front();
    EXPECT_LT(again.size(), progress.size());
}

TEST(ServerTelemetry, NativeAndResponsesStreamsCarryProgress) {
    ServerProcess s(server_args({"--batch-size", "16"}));
    ASSERT_TRUE(s.started()) << s.log();
    std::vector<json> progress;
    for (const json& c : stream_chunks(s, "/completion",
                                       {{"prompt", long_text()},
                                        {"n_predict", 3},
                                        {"stream", true},
                                        {"return_progress", true},
                                        {"timings_per_token", true}})) {
        if (!c.contains("prompt_progress")) continue;
        EXPECT_EQ(c["content"], "");
        EXPECT_EQ(c["stop"], false);
        EXPECT_EQ(c["timings"]["predicted_n"], 0);
        progress.push_back(c);
    }
    expect_progress(progress, 3);
    EXPECT_EQ(progress.front()["timings"]["prompt_n"], 0);
    EXPECT_EQ(progress.front()["timings"]["prompt_ms"].get<double>(), 0.0);

    progress.clear();
    bool delta_timed = false;
    json completed;
    for (const json& c : stream_chunks(s, "/v1/responses",
                                       {{"input", long_text() + " again"},
                                        {"max_output_tokens", 3},
                                        {"stream", true},
                                        {"return_progress", true},
                                        {"timings_per_token", true}})) {
        if (c.contains("prompt_progress")) {
            EXPECT_EQ(c["type"], "response.in_progress");
            progress.push_back(c);
        }
        if (c["type"] == "response.output_text.delta") delta_timed = delta_timed || c.contains("timings");
        if (c["type"] == "response.completed" || c["type"] == "response.incomplete") completed = c;
    }
    expect_progress(progress, 2);
    EXPECT_TRUE(delta_timed);
    ASSERT_TRUE(completed.contains("timings")) << completed;
    EXPECT_EQ(completed["timings"]["predicted_n"], 3);
}

TEST(ServerTelemetry, VerboseOnlyWhenAskedFor) {
    const json chat = {
        {"messages", {{{"role", "system"}, {"content", "Book"}}, {{"role", "user"}, {"content", "gold?"}}}},
        {"max_tokens", 3},
        {"temperature", 0}};
    {
        ServerProcess s(server_args());
        ASSERT_TRUE(s.started()) << s.log();
        const auto plain = curl("POST", s.url("/v1/chat/completions"), chat.dump());
        EXPECT_FALSE(parse_or_null(plain.body).contains("__verbose")) << plain.body;  // never by default
        json asked = chat;
        asked["verbose"] = true;
        const json r = parse_or_null(curl("POST", s.url("/v1/chat/completions"), asked.dump()).body);
        ASSERT_TRUE(r.contains("__verbose")) << r;
        const std::string prompt = r["__verbose"]["prompt"];
        EXPECT_NE(prompt.find("Book"), std::string::npos) << prompt;
        EXPECT_NE(prompt.find("gold?"), std::string::npos) << prompt;
        EXPECT_EQ(r["__verbose"]["content"], r["choices"][0]["message"]["content"]);
        EXPECT_EQ(r["__verbose"]["tokens_predicted"], 3);
        EXPECT_EQ(r["__verbose"]["stop_type"], "limit");
        asked["verbose"] = "yes";
        expect_api_error(curl("POST", s.url("/v1/chat/completions"), asked.dump()), 400);
        EXPECT_EQ(parse_or_null(curl("POST", s.url("/v1/chat/completions"), asked.dump()).body)["error"]["param"],
                  "verbose");
    }
    ServerProcess s(server_args({"--verbose"}));
    ASSERT_TRUE(s.started()) << s.log();
    const json r = parse_or_null(curl("POST", s.url("/v1/chat/completions"), chat.dump()).body);
    ASSERT_TRUE(r.contains("__verbose")) << r;
    json refused = chat;
    refused["verbose"] = false;
    EXPECT_FALSE(parse_or_null(curl("POST", s.url("/v1/chat/completions"), refused.dump()).body).contains("__verbose"));
    const json completion = parse_or_null(
        curl("POST", s.url("/v1/completions"), json({{"prompt", "the cat"}, {"max_tokens", 2}}).dump()).body);
    EXPECT_NE(completion["__verbose"]["prompt"].get<std::string>().find("the cat"), std::string::npos) << completion;
    // Streamed: the finishing chunk carries it, with the text the stream sent.
    json streamed = chat;
    streamed["stream"] = true;
    std::string text;
    json verbose;
    for (const json& c : stream_chunks(s, "/v1/chat/completions", streamed)) {
        if (c.contains("__verbose")) verbose = c["__verbose"];
        if (!c["choices"].empty() && c["choices"][0]["delta"].contains("content") &&
            c["choices"][0]["delta"]["content"].is_string()) {
            text += c["choices"][0]["delta"]["content"].get<std::string>();
        }
    }
    ASSERT_TRUE(verbose.is_object());
    EXPECT_EQ(verbose["content"], text);
    EXPECT_NE(verbose["prompt"].get<std::string>().find("gold?"), std::string::npos);
}

TEST(ServerTelemetry, PostSamplingProbsAreTheChainsDistribution) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json body = {{"prompt", "the cat sat on"}, {"n_predict", 6}, {"n_probs", 5},
                       {"temperature", 1.0},         {"top_k", 3},     {"seed", 7},
                       {"post_sampling_probs", true}};
    const auto r = curl("POST", s.url("/completion"), body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const json probs = parse_or_null(r.body)["completion_probabilities"];
    ASSERT_EQ(probs.size(), 6u) << r.body;
    for (const json& tok : probs) {
        EXPECT_FALSE(tok.contains("logprob"));
        // top_k 3 keeps three tokens: at most three listed though five were asked, summing to 1.
        ASSERT_GE(tok["top_probs"].size(), 1u);
        ASSERT_LE(tok["top_probs"].size(), 3u) << tok;
        double sum = 0;
        bool chosen_listed = false;
        for (const json& alt : tok["top_probs"]) {
            EXPECT_GT(alt["prob"].get<double>(), 0.0);
            sum += alt["prob"].get<double>();
            if (alt["id"] == tok["id"]) {
                chosen_listed = true;
                EXPECT_NEAR(alt["prob"].get<double>(), tok["prob"].get<double>(), 1e-9);
            }
        }
        EXPECT_TRUE(chosen_listed) << tok;  // the drawn token was one the chain kept
        EXPECT_NEAR(sum, 1.0, 1e-4) << tok;
    }
    // Greedy: the argmax alone, certain. Without the flag: the raw distribution's logprobs.
    json greedy = body;
    greedy["temperature"] = 0;
    for (const json& tok :
         parse_or_null(curl("POST", s.url("/completion"), greedy.dump()).body)["completion_probabilities"]) {
        ASSERT_EQ(tok["top_probs"].size(), 1u) << tok;
        EXPECT_EQ(tok["prob"], 1.0);
    }
    json raw = body;
    raw.erase("post_sampling_probs");
    for (const json& tok :
         parse_or_null(curl("POST", s.url("/completion"), raw.dump()).body)["completion_probabilities"]) {
        EXPECT_EQ(tok["top_logprobs"].size(), 5u) << tok;
    }
}

}  // namespace
}  // namespace lazyattn::testing
