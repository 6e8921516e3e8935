// Shared pieces of the server process tests: the synthetic model they serve, default flags, and
// checks every test repeats (an OpenAI error body, a server that still works afterwards).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server_process.h"
#include "synthetic_model_fixture.h"

namespace lazyattn::testing {

// A tiny random-weight model; its context is long enough for streams that run for seconds.
inline std::string server_model_path(int32_t context_length = 4096) {
    synthetic::SyntheticModelOptions o;
    o.context_length = context_length;
    return synthetic_model_path(o, "server-ctx" + std::to_string(context_length));
}

inline std::vector<std::string> server_args(std::vector<std::string> extra = {}, int32_t context_length = 4096) {
    std::vector<std::string> args = {"--model", server_model_path(context_length), "--kv-cache-mb", "16", "--threads",
                                     "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
}

inline nlohmann::json parse_or_null(const std::string& body) { return nlohmann::json::parse(body, nullptr, false); }

// A completion request body (chat when `chat`), extra fields merged in.
inline std::string completion_body(bool chat, const nlohmann::json& extra = nlohmann::json::object(),
                                   int max_tokens = 4) {
    nlohmann::json b = {{"max_tokens", max_tokens}, {"temperature", 0}};
    if (chat) {
        b["messages"] = {{{"role", "user"}, {"content", "what is gold?"}}};
    } else {
        b["prompt"] = "the cat sat on";
    }
    b.update(extra);
    return b.dump();
}

// The response is an OpenAI error with this status (and code, when given).
inline void expect_api_error(const HttpResult& r, int status, const std::string& code = "") {
    EXPECT_EQ(r.status, status) << r.body;
    auto j = parse_or_null(r.body);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
    const auto& e = j["error"];
    for (const char* key : {"message", "type", "param", "code"})
        EXPECT_TRUE(e.contains(key)) << key << " in " << r.body;
    EXPECT_TRUE(e["message"].is_string() && !e["message"].get<std::string>().empty());
    if (!code.empty()) {
        EXPECT_EQ(e["code"], code) << r.body;
    }
}

inline std::string metrics_text(const ServerProcess& s) { return curl("GET", s.url("/metrics")).body; }

// Waits until no request runs and no KV block is referenced; true if that happened in time.
inline bool wait_blocks_released(const ServerProcess& s, double timeout_s = 10) {
    for (int i = 0; i < int(timeout_s * 20); ++i) {
        const std::string m = metrics_text(s);
        if (metric_value(m, "lazyattn_kv_blocks_used") == 0 && metric_value(m, "lazyattn_num_requests_running") == 0 &&
            metric_value(m, "lazyattn_num_requests_waiting") == 0) {
            return true;
        }
        usleep(50 * 1000);
    }
    return false;
}

// After an error: the server still answers, and nothing holds KV blocks.
inline void expect_still_serving(const ServerProcess& s) {
    auto r = curl("POST", s.url("/v1/completions"), completion_body(false));
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_TRUE(wait_blocks_released(s));
}

}  // namespace lazyattn::testing
