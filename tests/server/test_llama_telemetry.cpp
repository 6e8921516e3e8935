// llama-server's telemetry as units (server/llama_telemetry.h): the timings rule (rates over
// what they time, the decode rate over the n-1 steps after the first token), prompt_progress,
// and fields set into serialized bodies and SSE events.
#include "server/llama_telemetry.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/sse.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

TEST(LlamaTelemetry, TimingsRatesAreOverWhatTheyTime) {
    const json t = llama_timings(4, 20, 50.0, 16, 150.0);
    EXPECT_EQ(t["cache_n"], 4);
    EXPECT_EQ(t["prompt_n"], 20);
    EXPECT_DOUBLE_EQ(t["prompt_per_token_ms"].get<double>(), 2.5);
    EXPECT_DOUBLE_EQ(t["prompt_per_second"].get<double>(), 400.0);
    EXPECT_EQ(t["predicted_n"], 16);
    // 16 tokens, 15 decode steps in 150 ms.
    EXPECT_DOUBLE_EQ(t["predicted_per_second"].get<double>(), 100.0);
    EXPECT_DOUBLE_EQ(t["predicted_per_token_ms"].get<double>(), 10.0);
    // One token: no decode step, rate 0 (never a division by zero).
    const json one = llama_timings(0, 5, 10.0, 1, 0.0);
    EXPECT_DOUBLE_EQ(one["predicted_per_second"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(one["predicted_per_token_ms"].get<double>(), 0.0);
    // The start of a prompt: nothing computed, nothing timed.
    const json start = llama_timings(engine::EventTimings{});
    for (const auto& [key, value] : start.items()) EXPECT_EQ(value.get<double>(), 0.0) << key;
}

TEST(LlamaTelemetry, EventTimingsAndProgress) {
    engine::EventTimings e;
    e.prompt_tokens = 100;
    e.cached = 30;
    e.processed = 62;
    e.prompt_ms = 8.0;
    const json progress = prompt_progress_json(e);
    EXPECT_EQ(progress, json({{"total", 100}, {"cache", 30}, {"processed", 62}, {"time_ms", 8.0}}));
    const json t = llama_timings(e);
    EXPECT_EQ(t["cache_n"], 30);
    EXPECT_EQ(t["prompt_n"], 32);  // computed so far: processed beyond the cache
    EXPECT_DOUBLE_EQ(t["prompt_per_second"].get<double>(), 4000.0);
    EXPECT_EQ(t["predicted_n"], 0);
}

TEST(LlamaTelemetry, FieldsSetIntoBodiesAndEvents) {
    EXPECT_EQ(json::parse(with_fields(R"({"a":1})", {{"b", 2}})), json({{"a", 1}, {"b", 2}}));
    std::string out = "kept";
    const size_t from = out.size();
    out += sse_event(R"({"n":1})");
    out += sse_comment("waiting");
    out += sse_event(R"({"n":2})");
    out += kSseDone;
    std::string last = out;
    set_event_fields(out, from, {{"t", true}});
    const auto all = out.substr(from);
    EXPECT_EQ(out.substr(0, from), "kept");
    EXPECT_NE(all.find(R"({"n":1,"t":true})"), std::string::npos) << all;
    EXPECT_NE(all.find(R"({"n":2,"t":true})"), std::string::npos) << all;
    EXPECT_NE(all.find(sse_comment("waiting")), std::string::npos) << all;
    EXPECT_NE(all.find(kSseDone), std::string::npos) << all;
    set_event_fields(last, from, {{"t", true}}, true);
    EXPECT_NE(last.find(R"({"n":1})"), std::string::npos) << last;
    EXPECT_NE(last.find(R"({"n":2,"t":true})"), std::string::npos) << last;
}

}  // namespace
}  // namespace lazyattn::server
