// `lazyattn serve` on a synthetic model, driven with curl over loopback: the OpenAI response
// shapes (whole and streamed), document reuse reported as cached_tokens, the document endpoints,
// models, health and metrics.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using json = nlohmann::json;

const std::vector<std::string> kDocs = {"the quick brown fox jumps over the lazy dog",
                                        "a stitch in time saves nine and then some more",
                                        "all that glitters is not gold, said the old man"};

TEST(ServerApi, ServedNameAndContextCapFromFlagsOrEnvironment) {
    {
        ServerProcess s(server_args({"--served-model-name", "rag-model", "-c", "256"}));
        ASSERT_TRUE(s.started()) << s.log();
        auto m = parse_or_null(curl("GET", s.url("/v1/models")).body);
        EXPECT_EQ(m["data"][0]["id"], "rag-model") << m;
        EXPECT_EQ(m["data"][0]["max_model_len"], 256) << m;
        // Requests name the served model, and the cap applies.
        EXPECT_EQ(curl("POST", s.url("/v1/completions"), completion_body(false, {{"model", "rag-model"}})).status, 200);
        auto long_prompt =
            curl("POST", s.url("/v1/completions"), completion_body(false, {{"prompt", std::vector<int>(300, 7)}}));
        expect_api_error(long_prompt, 400, "context_length_exceeded");
    }
    setenv("LAZYATTN_ARG_SERVED_MODEL_NAME", "from-env", 1);
    ServerProcess s(server_args());
    unsetenv("LAZYATTN_ARG_SERVED_MODEL_NAME");
    ASSERT_TRUE(s.started()) << s.log();
    EXPECT_EQ(parse_or_null(curl("GET", s.url("/v1/models")).body)["data"][0]["id"], "from-env");
}

TEST(ServerApi, AccessLogAndStatsLinesAsJson) {
    ServerProcess s(server_args({"--log-format", "json", "--stats-interval", "0.2"}));
    ASSERT_TRUE(s.started()) << s.log();
    ASSERT_EQ(curl("POST", s.url("/v1/completions"), completion_body(false, {{"ignore_eos", true}}, 400)).status, 200);
    usleep(600 * 1000);  // a stats line is written while busy, at most 0.2 s apart
    bool access = false, stats = false, loaded = false;
    std::istringstream lines(s.log());
    for (std::string line; std::getline(lines, line);) {
        const json j = parse_or_null(line);
        if (!j.is_object()) continue;  // every log line is one JSON object; others are not ours
        EXPECT_TRUE(j.contains("time") && j.contains("level")) << line;
        if (j["msg"] == "model loaded") loaded = true;
        if (j["msg"] == "engine stats") stats = j.contains("generation_tok_s") && j.contains("kv_usage_pct");
        if (j["msg"] == "http request" && j["path"] == "/v1/completions") {
            access = true;
            EXPECT_EQ(j["status"], 200) << line;
            EXPECT_EQ(j["method"], "POST") << line;
            EXPECT_EQ(j["generated_tokens"], 400) << line;
            EXPECT_GT(j["prompt_tokens"].get<double>(), 0) << line;
            EXPECT_GE(j["ttft_ms"].get<double>(), 0) << line;
        }
    }
    EXPECT_TRUE(access) << s.log();
    EXPECT_TRUE(loaded) << s.log();
    EXPECT_TRUE(stats) << s.log();
}

TEST(ServerApi, HealthModelsAndMetrics) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    auto h = curl("GET", s.url("/health"));
    EXPECT_EQ(h.status, 200);
    const json health = parse_or_null(h.body);
    EXPECT_EQ(health["status"], "ok") << h.body;
    EXPECT_EQ(health["requests_waiting"], 0) << h.body;
    EXPECT_EQ(health["requests_running"], 0) << h.body;
    auto m = parse_or_null(curl("GET", s.url("/v1/models")).body);
    ASSERT_EQ(m["data"].size(), 1u) << m;
    EXPECT_EQ(m["data"][0]["id"], "server-ctx4096.gguf");
    EXPECT_EQ(m["data"][0]["object"], "model");
    const std::string text = metrics_text(s);
    for (const char* name :
         {"lazyattn_http_requests_total", "lazyattn_time_to_first_token_seconds_bucket",
          "lazyattn_e2e_request_latency_seconds_count", "lazyattn_prompt_tokens_total", "lazyattn_kv_cache_usage_perc",
          "lazyattn_prefix_cache_hits_total", "lazyattn_document_hits_total", "lazyattn_document_misses_total",
          "lazyattn_kv_blocks_used", "lazyattn_kv_blocks_cached", "lazyattn_kv_blocks_free",
          "lazyattn_num_requests_waiting", "lazyattn_num_preemptions_total", "lazyattn_num_requests_running"}) {
        EXPECT_NE(text.find(name), std::string::npos) << name;
    }
    EXPECT_EQ(metric_value(text, "lazyattn_http_requests_total{route=\"/health\",status=\"200\"}"), 1) << text;
    EXPECT_GT(metric_value(text, "lazyattn_kv_blocks_total"), 0);
}

TEST(ServerApi, CompletionHasTheOpenAiShape) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    auto r = curl("POST", s.url("/v1/completions"), completion_body(false, {{"ignore_eos", true}}, 5));
    ASSERT_EQ(r.status, 200) << r.body;
    auto j = parse_or_null(r.body);
    EXPECT_EQ(j["object"], "text_completion");
    EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
    EXPECT_TRUE(j["created"].is_number_integer());
    EXPECT_EQ(j["model"], "server-ctx4096.gguf");
    ASSERT_EQ(j["choices"].size(), 1u);
    EXPECT_EQ(j["choices"][0]["index"], 0);
    EXPECT_TRUE(j["choices"][0]["text"].is_string());
    EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    const auto& u = j["usage"];
    EXPECT_EQ(u["completion_tokens"], 5);
    EXPECT_GT(u["prompt_tokens"].get<int>(), 0);
    EXPECT_EQ(u["total_tokens"].get<int>(), u["prompt_tokens"].get<int>() + 5);
    EXPECT_TRUE(u["prompt_tokens_details"]["cached_tokens"].is_number_integer());
}

TEST(ServerApi, ChatWithDocumentsReusesThemInAnyOrder) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    json docs = {kDocs[0], {{"title", "Proverb"}, {"text", kDocs[1]}}, {{"text", kDocs[2]}}};
    auto first =
        parse_or_null(curl("POST", s.url("/v1/chat/completions"), completion_body(true, {{"documents", docs}})).body);
    ASSERT_TRUE(first.contains("choices")) << first;
    EXPECT_EQ(first["object"], "chat.completion");
    EXPECT_EQ(first["choices"][0]["message"]["role"], "assistant");
    EXPECT_TRUE(first["choices"][0]["message"]["content"].is_string());
    EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    std::swap(docs[0], docs[2]);
    auto second =
        parse_or_null(curl("POST", s.url("/v1/chat/completions"), completion_body(true, {{"documents", docs}})).body);
    const int prompt = second["usage"]["prompt_tokens"],
              cached = second["usage"]["prompt_tokens_details"]["cached_tokens"];
    EXPECT_EQ(prompt, first["usage"]["prompt_tokens"].get<int>());
    // The preamble and all three documents are hits; only the question tail is computed.
    EXPECT_GT(cached, prompt / 2) << second;
    const std::string m = metrics_text(s);
    EXPECT_EQ(metric_value(m, "lazyattn_document_hits_total"), 4) << m;
    EXPECT_EQ(metric_value(m, "lazyattn_prefix_cache_hits_total"), cached);
}

// Recompute chosen by the question, over a real socket: the object and string forms are served
// (also as the server's default), the same documents answer again in another order, and a bad
// share or selection is a 400 naming the nested field while the server keeps serving.
TEST(ServerApi, RecomputeChosenByTheQuestionInEveryForm) {
    ServerProcess s(server_args({"--document-reuse", "recompute=20%@query"}));
    ASSERT_TRUE(s.started()) << s.log();
    json docs = {kDocs[0], kDocs[1], kDocs[2]};
    for (const json& reuse :
         {json{{"recompute", {{"share", 0.3}, {"select", "query"}}}}, json("anchor+recompute=25%@query-all"),
          json{{"recompute", {{"tokens", 3}, {"select", "random"}}}}, json("recompute=20%@deviation"),
          json{{"recompute", {{"share", 0.2}, {"select", "first-query"}}}}, json("neighbours=2"),
          json{{"neighbours", 1}, {"recompute", {{"share", 0.15}, {"select", "query"}}}}, json(nullptr)}) {
        json extra = {{"documents", docs}};
        if (!reuse.is_null()) extra["document_reuse"] = reuse;
        const auto r = curl("POST", s.url("/v1/chat/completions"), completion_body(true, extra));
        EXPECT_EQ(r.status, 200) << reuse << r.body;
        EXPECT_TRUE(parse_or_null(r.body)["choices"][0]["message"]["content"].is_string()) << r.body;
        std::swap(docs[0], docs[2]);
    }
    expect_api_error(
        curl("POST", s.url("/v1/chat/completions"),
             completion_body(true, {{"documents", docs}, {"document_reuse", {{"recompute", {{"share", 2}}}}}})),
        400, "invalid_value");
    const auto bad = curl(
        "POST", s.url("/v1/chat/completions"),
        completion_body(
            true, {{"documents", docs}, {"document_reuse", {{"recompute", {{"share", 0.1}, {"select", "best"}}}}}}));
    expect_api_error(bad, 400, "invalid_value");
    EXPECT_EQ(parse_or_null(bad.body)["error"]["param"], "document_reuse.recompute.select") << bad.body;
    EXPECT_EQ(curl("POST", s.url("/v1/chat/completions"), completion_body(true, {{"documents", docs}})).status, 200);
}

TEST(ServerApi, CompletionStreamEndsWithFinishReasonAndDone) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    auto r =
        curl("POST", s.url("/v1/completions"),
             completion_body(false, {{"stream", true}, {"ignore_eos", true}, {"documents", {kDocs[0]}}}, 6), {"-N"});
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.headers["content-type"], "text/event-stream");
    auto events = sse_payloads(r.body);
    ASSERT_GE(events.size(), 2u) << r.body;
    EXPECT_EQ(events.back(), "[DONE]");
    std::string text;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
        auto c = parse_or_null(events[i]);
        EXPECT_EQ(c["object"], "text_completion") << events[i];
        text += c["choices"][0]["text"].get<std::string>();
        EXPECT_EQ(c["choices"][0]["finish_reason"].is_null(), i + 2 < events.size()) << events[i];
    }
    EXPECT_EQ(parse_or_null(events[events.size() - 2])["choices"][0]["finish_reason"], "length");
    // The same request unstreamed (greedy) gives the same text.
    auto whole = parse_or_null(curl("POST", s.url("/v1/completions"),
                                    completion_body(false, {{"ignore_eos", true}, {"documents", {kDocs[0]}}}, 6))
                                   .body);
    EXPECT_EQ(whole["choices"][0]["text"], text);
}

TEST(ServerApi, ChatStreamSendsRoleThenDeltasThenFinishThenUsage) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    auto r = curl("POST", s.url("/v1/chat/completions"),
                  completion_body(
                      true, {{"stream", true}, {"ignore_eos", true}, {"stream_options", {{"include_usage", true}}}}, 5),
                  {"-N"});
    ASSERT_EQ(r.status, 200) << r.body;
    auto events = sse_payloads(r.body);
    ASSERT_GE(events.size(), 4u) << r.body;
    EXPECT_EQ(events.back(), "[DONE]");
    auto first = parse_or_null(events.front());
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
    auto usage = parse_or_null(events[events.size() - 2]);
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["completion_tokens"], 5);
    auto finish = parse_or_null(events[events.size() - 3]);
    EXPECT_EQ(finish["choices"][0]["finish_reason"], "length");
    EXPECT_TRUE(finish["choices"][0]["delta"].empty());
    for (size_t i = 1; i + 3 < events.size(); ++i) {
        auto c = parse_or_null(events[i]);
        EXPECT_TRUE(c["choices"][0]["delta"].contains("content")) << events[i];
        EXPECT_FALSE(c["choices"][0]["delta"].contains("role")) << events[i];
        EXPECT_TRUE(c.contains("usage") && c["usage"].is_null());
    }
}

TEST(ServerApi, SeededSamplingIsReproducible) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const std::string body = completion_body(
        false, {{"temperature", 1.0}, {"top_p", 0.9}, {"top_k", 20}, {"seed", 7}, {"ignore_eos", true}}, 8);
    auto a = parse_or_null(curl("POST", s.url("/v1/completions"), body).body);
    auto b = parse_or_null(curl("POST", s.url("/v1/completions"), body).body);
    EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
}

TEST(ServerApi, DocumentsCanBePinnedListedUsedByIdAndUnpinned) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    auto pinned = parse_or_null(curl("POST", s.url("/v1/documents"),
                                     json({{"documents", {kDocs[0], {{"title", "T"}, {"text", kDocs[1]}}}}}).dump())
                                    .body);
    ASSERT_EQ(pinned["data"].size(), 2u) << pinned;
    const std::string id0 = pinned["data"][0]["id"], id1 = pinned["data"][1]["id"];
    const int tokens0 = pinned["data"][0]["tokens"];
    EXPECT_GT(tokens0, 0);
    auto list = parse_or_null(curl("GET", s.url("/v1/documents")).body);
    ASSERT_EQ(list["data"].size(), 2u) << list;
    for (const auto& d : list["data"]) {
        EXPECT_TRUE(d["pinned"].get<bool>());
        EXPECT_GT(d["last_used"].get<int64_t>(), 1600000000);
    }
    // A request naming the document by id reads it from the cache.
    auto r = parse_or_null(
        curl("POST", s.url("/v1/completions"), completion_body(false, {{"documents", {{{"id", id0}}}}})).body);
    EXPECT_GE(r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), tokens0) << r;
    // ... and so does one carrying the same text.
    auto t =
        parse_or_null(curl("POST", s.url("/v1/completions"), completion_body(false, {{"documents", {kDocs[0]}}})).body);
    EXPECT_GE(t["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), tokens0) << t;
    EXPECT_EQ(curl("DELETE", s.url("/v1/documents/" + id0)).status, 200);
    expect_api_error(curl("DELETE", s.url("/v1/documents/" + id0)), 404);
    EXPECT_EQ(curl("DELETE", s.url("/v1/documents/" + id1)).status, 200);
    EXPECT_TRUE(wait_blocks_released(s));  // pins held blocks; unpinned, nothing is held
}

}  // namespace
}  // namespace lazyattn::testing
