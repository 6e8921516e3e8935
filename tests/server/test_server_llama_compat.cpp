// What llama-server's clients (and llama.cpp's own server tests) expect of the OpenAI routes, over
// a real socket: the routes without /v1, llama-server's request names, the response fields its
// clients check, and constraints served (or refused by name) rather than ignored.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>

#include "grammar/constraint_compiler.h"
#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

// OpenAI(base_url="http://host:port") calls /chat/completions and /models; llama-server serves
// both, and /v1/health beside /health.
TEST(ServerLlamaCompat, RoutesWithoutV1AreServed) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const auto chat = curl("POST", s.url("/chat/completions"), completion_body(true));
    ASSERT_EQ(chat.status, 200) << chat.body;
    EXPECT_EQ(parse_or_null(chat.body)["object"], "chat.completion") << chat.body;
    const auto models = curl("GET", s.url("/models"));
    ASSERT_EQ(models.status, 200) << models.body;
    EXPECT_EQ(parse_or_null(models.body)["data"][0]["id"], parse_or_null(chat.body)["model"]);
    EXPECT_EQ(curl("GET", s.url("/v1/health")).status, 200);
}

// --alias c,a,b (llama-server): every name is answered, also under --strict-model-name; the id is
// the first in sorted order (llama-server keeps them in a sorted set) and /v1/models lists every
// name as its aliases, the --tags as its tags.
TEST(ServerLlamaCompat, AliasesAreNamesTheModelAnswersTo) {
    ServerProcess s(
        server_args({"--alias", "tiny,smol-instruct,smol", "--strict-model-name", "--tags", "chat, small"}));
    ASSERT_TRUE(s.started()) << s.log();
    for (const char* name : {"smol", "smol-instruct", "tiny"}) {
        const auto r = curl("POST", s.url("/v1/completions"), completion_body(false, {{"model", name}}));
        ASSERT_EQ(r.status, 200) << name << " " << r.body;
        EXPECT_EQ(parse_or_null(r.body)["model"], "smol") << "responses name the id";
    }
    expect_api_error(curl("POST", s.url("/v1/completions"), completion_body(false, {{"model", "smol,tiny"}})), 404,
                     "model_not_found");
    const json model = parse_or_null(curl("GET", s.url("/v1/models")).body)["data"][0];
    EXPECT_EQ(model["id"], "smol");
    EXPECT_EQ(model["aliases"], json::array({"smol", "smol-instruct", "tiny"}));
    EXPECT_EQ(model["tags"], json::array({"chat", "small"}));

    // vLLM's --served-model-name keeps its order: the first is the id.
    ServerProcess v(server_args({"--served-model-name", "tiny,smol"}));
    ASSERT_TRUE(v.started()) << v.log();
    const json vm = parse_or_null(curl("GET", v.url("/v1/models")).body)["data"][0];
    EXPECT_EQ(vm["id"], "tiny");
    EXPECT_EQ(vm["aliases"], json::array({"tiny", "smol"}));
    EXPECT_EQ(vm["tags"], json::array());
}

// POST /apply-template renders a chat request's messages as a generation would, without
// generating: SmolLM2's ChatML template, the generation prompt on by default and off when asked,
// bad input a 400 naming the field.
TEST(ServerLlamaCompat, ApplyTemplateRendersWhatAChatRequestWould) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json user = {{"role", "user"}, {"content", "Hi there"}};
    auto r = curl("POST", s.url("/apply-template"), json{{"messages", {user}}}.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    const std::string prompt = parse_or_null(r.body)["prompt"];
    EXPECT_NE(prompt.find("<|im_start|>user\nHi there<|im_end|>\n"), std::string::npos) << prompt;
    EXPECT_TRUE(prompt.ends_with("<|im_start|>assistant\n")) << prompt;
    r = curl("POST", s.url("/apply-template"), json{{"messages", {user}}, {"add_generation_prompt", false}}.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_FALSE(std::string(parse_or_null(r.body)["prompt"]).ends_with("<|im_start|>assistant\n")) << r.body;
    expect_api_error(curl("POST", s.url("/apply-template"), json{{"prompt", "x"}}.dump()), 400,
                     "missing_required_parameter");
    expect_api_error(curl("POST", s.url("/apply-template"), json{{"messages", "x"}}.dump()), 400);
    expect_api_error(
        curl("POST", s.url("/apply-template"), json{{"messages", {user}}, {"continue_final_message", true}}.dump()),
        400);
}

// n_predict is llama-server's max_tokens (-1: no limit of its own, the route's default applies).
TEST(ServerLlamaCompat, NPredictIsMaxTokens) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    for (const bool chat : {false, true}) {
        json body = parse_or_null(completion_body(chat, {{"n_predict", 40}, {"ignore_eos", true}}));
        body.erase("max_tokens");
        const auto r = curl("POST", s.url(chat ? "/v1/chat/completions" : "/v1/completions"), body.dump());
        ASSERT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(parse_or_null(r.body)["usage"]["completion_tokens"], 40) << r.body;
    }
    json unlimited = parse_or_null(completion_body(false, {{"n_predict", -1}}));
    unlimited.erase("max_tokens");
    EXPECT_EQ(curl("POST", s.url("/v1/completions"), unlimited.dump()).status, 200);
    expect_api_error(curl("POST", s.url("/v1/completions"), completion_body(false, {{"n_predict", 0}})), 400);
}

// llama-server's clients check system_fingerprint ("b<build>"); the first streamed chat chunk
// names the role with a null content, as OpenAI and llama-server send it.
TEST(ServerLlamaCompat, FingerprintAndFirstChunk) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json whole = parse_or_null(curl("POST", s.url("/v1/chat/completions"), completion_body(true)).body);
    ASSERT_TRUE(whole["system_fingerprint"].is_string()) << whole;
    EXPECT_EQ(whole["system_fingerprint"].get<std::string>().rfind('b', 0), 0u) << whole;
    const auto streamed = curl("POST", s.url("/v1/chat/completions"), completion_body(true, {{"stream", true}}));
    const auto payloads = sse_payloads(streamed.body);
    ASSERT_GE(payloads.size(), 2u) << streamed.body;
    const json first = parse_or_null(payloads[0]);
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant") << first;
    EXPECT_TRUE(first["choices"][0]["delta"].contains("content")) << first;
    EXPECT_TRUE(first["choices"][0]["delta"]["content"].is_null()) << first;
    EXPECT_EQ(first["system_fingerprint"], whole["system_fingerprint"]);
}

// Constraints in every peer's spelling are served (tests/server/test_server_structured_output.cpp
// checks what they produce on the embedded model), never silently ignored: without the grammar
// engine each is a 400 naming its field.
TEST(ServerLlamaCompat, ConstraintsAreServedOrRefusedByName) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json constraints = {{"grammar", "root ::= \"yes\" | \"no\""},
                              {"json_schema", {{"type", "object"}}},
                              {"guided_json", {{"type", "object"}}},
                              {"guided_regex", "(yes|no)"},
                              {"guided_choice", {"yes", "no"}},
                              {"guided_grammar", "root ::= \"yes\" | \"no\""},
                              {"structured_outputs", {{"choice", {"yes", "no"}}}}};
    for (const auto& [key, value] : constraints.items()) {
        for (const bool chat : {false, true}) {
            const auto r = curl("POST", s.url(chat ? "/v1/chat/completions" : "/v1/completions"),
                                completion_body(chat, {{key, value}}, 8));
            if (!grammar::engine_available()) {
                expect_api_error(r, 400, "unsupported");  // param: the field, e.g. structured_outputs.choice
                EXPECT_EQ(parse_or_null(r.body)["error"]["param"].get<std::string>().rfind(key, 0), 0u) << r.body;
                continue;
            }
            ASSERT_EQ(r.status, 200) << key << ": " << r.body;
            const json c = parse_or_null(r.body)["choices"][0];
            if (key.find("json") != std::string::npos || c["finish_reason"] != "stop") continue;
            const std::string text = chat ? c["message"]["content"].get<std::string>() : c["text"].get<std::string>();
            EXPECT_TRUE(text == "yes" || text == "no") << key << ": " << r.body;
        }
    }
    // An empty grammar constrains nothing (llama-server's default).
    EXPECT_EQ(curl("POST", s.url("/v1/completions"), completion_body(false, {{"grammar", ""}})).status, 200);
}

// A prompt past the context: OpenAI's clients read the status and `code`, llama-server's the
// `type` and the sizes; one body carries both.
TEST(ServerLlamaCompat, AContextOverflowCarriesBothPeersFields) {
    ServerProcess s(server_args({}, 512));
    ASSERT_TRUE(s.started()) << s.log();
    const auto r =
        curl("POST", s.url("/v1/completions"), completion_body(false, {{"prompt", std::vector<int>(600, 7)}}));
    expect_api_error(r, 400, "context_length_exceeded");
    const json e = parse_or_null(r.body)["error"];
    EXPECT_EQ(e["type"], "exceed_context_size_error") << r.body;
    EXPECT_EQ(e["n_prompt_tokens"], 600) << r.body;
    EXPECT_EQ(e["n_ctx"], 512) << r.body;
}

// /tokenize with_pieces: a token that is part of a character comes back as its bytes (a list of
// ints, as llama-server gives it), never as U+FFFD; the pieces' bytes are the text.
TEST(ServerLlamaCompat, TokenPiecesThatSplitACharacterAreBytes) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const std::string text = "emoji \xf0\x9f\xa4\x97 and \xe5\xaa\xbd";
    const auto r = curl("POST", s.url("/tokenize"), json{{"content", text}, {"with_pieces", true}}.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    std::string joined;
    int byte_pieces = 0;
    const json body = parse_or_null(r.body);
    for (const json& t : body["tokens"]) {
        const json& piece = t["piece"];
        if (piece.is_string()) {
            EXPECT_EQ(piece.get<std::string>().find("\xef\xbf\xbd"), std::string::npos) << r.body;  // U+FFFD
            joined += piece.get<std::string>();
        } else {
            ASSERT_TRUE(piece.is_array()) << r.body;
            ++byte_pieces;
            for (const json& b : piece) joined += char(b.get<int>());
        }
    }
    EXPECT_GT(byte_pieces, 0) << "no token split a character: the case is not exercised; " << r.body;
    EXPECT_EQ(joined, text) << r.body;
}

// llama-server's llamacpp:* series beside the lazyattn_ ones, each with its HELP and TYPE, from
// the same counts: its dashboards (and llama.cpp's test_metrics) read them.
TEST(ServerLlamaCompat, MetricsCarryLlamaServerSeries) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const auto r = curl("POST", s.url("/v1/completions"), completion_body(false, {{"ignore_eos", true}}, 8));
    ASSERT_EQ(r.status, 200) << r.body;
    const json usage = parse_or_null(r.body)["usage"];
    const auto metrics = curl("GET", s.url("/metrics"));
    ASSERT_EQ(metrics.status, 200) << metrics.body;
    const auto started = metrics.headers.find("process-start-time-unix");
    ASSERT_NE(started, metrics.headers.end()) << "no Process-Start-Time-Unix header (llama-server sends one)";
    EXPECT_GT(std::stoll(started->second), 1700000000LL) << started->second;  // a Unix time in seconds
    const std::string& text = metrics.body;
    auto value = [&text](const std::string& name) {
        const size_t at = text.find("\n" + name + " ");
        return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size() + 2));
    };
    const std::map<std::string, std::string> types = {{"llamacpp:prompt_tokens_total", "counter"},
                                                      {"llamacpp:prompt_tokens_cached_total", "counter"},
                                                      {"llamacpp:prompt_seconds_total", "counter"},
                                                      {"llamacpp:tokens_predicted_total", "counter"},
                                                      {"llamacpp:tokens_predicted_seconds_total", "counter"},
                                                      {"llamacpp:n_decode_total", "counter"},
                                                      {"llamacpp:n_tokens_max", "counter"},
                                                      {"llamacpp:prompt_tokens_seconds", "gauge"},
                                                      {"llamacpp:predicted_tokens_seconds", "gauge"},
                                                      {"llamacpp:requests_processing", "gauge"},
                                                      {"llamacpp:requests_deferred", "gauge"},
                                                      {"llamacpp:n_busy_slots_per_decode", "gauge"}};
    for (const auto& [name, type] : types) {
        EXPECT_NE(text.find("# TYPE " + name + " " + type + "\n"), std::string::npos) << name;
        EXPECT_NE(text.find("# HELP " + name + " "), std::string::npos) << name;
    }
    EXPECT_EQ(value("llamacpp:tokens_predicted_total"), 8);
    EXPECT_EQ(value("llamacpp:prompt_tokens_total") + value("llamacpp:prompt_tokens_cached_total"),
              usage["prompt_tokens"].get<double>());
    EXPECT_GT(value("llamacpp:n_decode_total"), 0);
    EXPECT_EQ(value("llamacpp:requests_processing"), 0);
    EXPECT_GE(value("llamacpp:n_tokens_max"), usage["total_tokens"].get<double>());
}

// A repeated prompt shorter than a KV block (as llama.cpp's test_metrics_prompt_processed_and_cached
// asks, with 9 tokens) is reused per token: the second request computes only its last token, and
// timings.cache_n, usage's cached_tokens and llamacpp:prompt_tokens_cached_total agree.
TEST(ServerLlamaCompat, ARepeatedShortPromptIsReusedPerToken) {
    ServerProcess s(server_args({"--parallel", "1", "--metrics"}));
    ASSERT_TRUE(s.started()) << s.log();
    const json body = {{"prompt", "the cat sat on"}, {"n_predict", 4}};
    int64_t processed = 0, cached = 0;
    std::vector<json> timings;
    for (int i = 0; i < 2; ++i) {
        const auto r = curl("POST", s.url("/completion"), body.dump());
        ASSERT_EQ(r.status, 200) << r.body;
        const json t = parse_or_null(r.body)["timings"];
        processed += t["prompt_n"].get<int64_t>();
        cached += t["cache_n"].get<int64_t>();
        timings.push_back(t);
    }
    const int64_t prompt = timings[0]["prompt_n"].get<int64_t>() + timings[0]["cache_n"].get<int64_t>();
    ASSERT_LT(prompt, 16) << "the prompt was to be shorter than one KV block: " << timings[0];
    EXPECT_EQ(timings[0]["cache_n"], 0) << timings[0];
    EXPECT_EQ(timings[1]["cache_n"], prompt - 1) << timings[1];
    EXPECT_EQ(timings[1]["prompt_n"], 1) << timings[1];
    // The OpenAI route reads the same cache and says the same.
    const auto c = curl("POST", s.url("/v1/completions"), json{{"prompt", "the cat sat on"}, {"max_tokens", 4}}.dump());
    ASSERT_EQ(c.status, 200) << c.body;
    const json usage = parse_or_null(c.body)["usage"];
    EXPECT_EQ(usage["prompt_tokens_details"]["cached_tokens"], prompt - 1) << usage;
    processed += 1;
    cached += prompt - 1;
    const std::string text = metrics_text(s);
    auto value = [&text](const std::string& name) {
        const size_t at = text.find("\n" + name + " ");
        return at == std::string::npos ? -1.0 : std::stod(text.substr(at + name.size() + 2));
    };
    EXPECT_EQ(value("llamacpp:prompt_tokens_total"), double(processed)) << text;
    EXPECT_EQ(value("llamacpp:prompt_tokens_cached_total"), double(cached)) << text;
}

// A route llama-server clients call that lazyattn does not serve answers 501 naming the feature,
// never a 404 that reads as a wrong URL.
TEST(ServerLlamaCompat, UnservedFeaturesAre501NamingThem) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const std::vector<std::pair<std::string, std::string>> routes = {
        {"POST", "/v1/embeddings"}, {"POST", "/rerank"},    {"POST", "/infill"},
        {"GET", "/lora-adapters"},  {"POST", "/slots/0"},   {"POST", "/v1/audio/transcriptions"},
        {"POST", "/props"},         {"POST", "/embedding"}, {"POST", "/models/load"},
        {"GET", "/tools"}};
    for (const auto& [method, path] : routes) {
        const auto r = curl(method, s.url(path), method == "POST" ? "{}" : "");
        EXPECT_EQ(r.status, 501) << method << " " << path << ": " << r.body;
        const json e = parse_or_null(r.body)["error"];
        EXPECT_EQ(e["type"], "not_supported_error") << r.body;
        EXPECT_NE(e["message"].get<std::string>().find("is not served"), std::string::npos) << r.body;
    }
    EXPECT_EQ(curl("GET", s.url("/no/such/route")).status, 404);  // a wrong URL is still a 404
}

// Routes of llama.cpp's server test suite that name features not served here (the web UI, chat
// token counting, resumable streams, Vertex AI prediction): 501 naming each, not a 404.
TEST(ServerLlamaCompat, SuiteRoutesNotServedAre501) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const std::vector<std::tuple<std::string, std::string, std::string>> routes = {
        {"GET", "/", "the web UI"},
        {"POST", "/chat/completions/input_tokens", "chat token counting"},
        {"POST", "/v1/chat/completions/input_tokens", "chat token counting"},
        {"GET", "/v1/stream?conv_id=a", "resumable streams"},
        {"DELETE", "/v1/stream?conv_id=a", "resumable streams"},
        {"POST", "/predict", "Vertex AI prediction"}};
    for (const auto& [method, path, feature] : routes) {
        const auto r = curl(method, s.url(path), method == "POST" ? "{}" : "");
        EXPECT_EQ(r.status, 501) << method << " " << path << ": " << r.body;
        const std::string message = parse_or_null(r.body)["error"]["message"].get<std::string>();
        EXPECT_EQ(message.rfind(feature, 0), 0u) << message;
        EXPECT_NE(message.find("is not served"), std::string::npos) << message;
    }
}

}  // namespace
}  // namespace lazyattn::testing
