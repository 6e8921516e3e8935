// llama-server's server-wide settings over a real socket, as its own test suite starts it:
// --parallel N (each request bounded by its slot's --ctx-size / N), the sampling defaults
// (--temp, --seed, --n-predict: what a request that sets none gets), the API dialect (/metrics'
// default and --metrics, a Responses length stop), and a comma-separated --host listened on at
// each address.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

json post(const ServerProcess& s, const std::string& path, const json& body, int want_status = 200) {
    const auto r = curl("POST", s.url(path), body.dump());
    EXPECT_EQ(r.status, want_status) << path << " " << body << " -> " << r.body;
    return parse_or_null(r.body);
}

std::string long_prompt(int words) {
    std::string p;
    for (int i = 0; i < words; ++i) p += "the cat sat on the mat ";
    return p;
}

// --ctx-size 128 --parallel 2: each request holds 64 tokens (prompt and generation), and every
// place a client reads the bound says 64; the engine's context (and vLLM's --max-num-seqs) stays
// the whole 128.
TEST(ServerLlamaSettings, ParallelBoundsEachRequestByItsSlot) {
    ServerProcess s(server_args({"--parallel", "2"}, 128));
    ASSERT_TRUE(s.started()) << s.log();
    const json props = parse_or_null(curl("GET", s.url("/props")).body);
    EXPECT_EQ(props["default_generation_settings"]["n_ctx"], 64) << props;
    EXPECT_EQ(props["total_slots"], 2);
    const json slots = parse_or_null(curl("GET", s.url("/slots")).body);
    ASSERT_EQ(slots.size(), 2u) << slots;
    EXPECT_EQ(slots[1]["n_ctx"], 64);
    EXPECT_EQ(parse_or_null(curl("GET", s.url("/v1/models")).body)["data"][0]["context_length"], 64);

    // n_predict -1 ends at the slot's end: prompt and generation together hold 64 tokens.
    const json full = post(s, "/completion", {{"prompt", "the cat"}, {"n_predict", -1}, {"ignore_eos", true}});
    EXPECT_EQ(full["stop_type"], "limit") << full;
    EXPECT_EQ(full["truncated"], true) << full;
    EXPECT_EQ(full["tokens_evaluated"].get<int>() + full["tokens_predicted"].get<int>(), 64) << full;
    // A max_tokens past the slot is clamped to it (finish_reason length), as at the context's end.
    const json clamped = post(s, "/v1/completions",
                              {{"prompt", "the cat"}, {"max_tokens", 100}, {"ignore_eos", true}, {"temperature", 0}});
    EXPECT_EQ(clamped["choices"][0]["finish_reason"], "length") << clamped;
    EXPECT_EQ(clamped["usage"]["total_tokens"], 64) << clamped;

    // A prompt past the slot (but within the engine's 128) is refused with the slot's n_ctx.
    for (const bool stream : {false, true}) {
        const auto r = curl("POST", s.url("/completion"),
                            json{{"prompt", long_prompt(12)}, {"n_predict", 4}, {"stream", stream}}.dump());
        expect_api_error(r, 400, "context_length_exceeded");
        const json e = parse_or_null(r.body)["error"];
        EXPECT_EQ(e["type"], "exceed_context_size_error") << r.body;
        EXPECT_EQ(e["n_ctx"], 64) << r.body;
        EXPECT_GT(e["n_prompt_tokens"].get<int>(), 64) << r.body;
    }

    // vLLM's spelling keeps lazyattn's meaning: each request may use the whole context.
    ServerProcess whole(server_args({"--max-num-seqs", "2"}, 128));
    ASSERT_TRUE(whole.started()) << whole.log();
    EXPECT_EQ(parse_or_null(curl("GET", whole.url("/slots")).body)[0]["n_ctx"], 128);
    const json longer = post(whole, "/completion", {{"prompt", long_prompt(12)}, {"n_predict", 4}});
    EXPECT_EQ(longer["tokens_predicted"], 4) << longer;

    // Both spellings at once contradict each other: refused.
    ServerProcess both(server_args({"--parallel", "2", "--max-num-seqs", "4"}, 128));
    EXPECT_FALSE(both.started());
    EXPECT_EQ(both.wait_exit(30), 2) << both.log();
}

// --temp, --seed and --n-predict are the defaults of requests that do not set them, on every
// API; a request's own field wins.
TEST(ServerLlamaSettings, SamplingDefaultsApplyToRequestsThatSetNone) {
    ServerProcess s(server_args({"--temp", "1.5", "--seed", "7", "--top-k", "40", "--n-predict", "12"}));
    ASSERT_TRUE(s.started()) << s.log();
    const json params = parse_or_null(curl("GET", s.url("/props")).body)["default_generation_settings"]["params"];
    EXPECT_EQ(params["seed"], 7) << params;
    EXPECT_DOUBLE_EQ(params["temperature"].get<double>(), 1.5) << params;
    EXPECT_EQ(params["top_k"], 40) << params;
    EXPECT_EQ(params["n_predict"], 12) << params;

    const json plain = {{"prompt", "the cat sat on"}, {"ignore_eos", true}};
    // Without a seed, every request samples with the server's: equal requests, equal text.
    const json a = post(s, "/completion", plain);
    const json b = post(s, "/completion", plain);
    EXPECT_EQ(a["content"], b["content"]);
    EXPECT_EQ(a["tokens_predicted"], 12) << a;  // --n-predict
    EXPECT_EQ(a["generation_settings"]["seed"], 7) << a;
    json seeded = plain;
    seeded["seed"] = 7;
    seeded["temperature"] = 1.5;
    EXPECT_EQ(post(s, "/completion", seeded)["content"], a["content"]);
    // The OpenAI route reads the same defaults under its own names.
    const json oa = post(s, "/v1/completions", {{"prompt", "the cat sat on"}, {"ignore_eos", true}});
    const json ob = post(s, "/v1/completions", {{"prompt", "the cat sat on"}, {"ignore_eos", true}});
    EXPECT_EQ(oa["choices"][0]["text"], ob["choices"][0]["text"]);
    EXPECT_EQ(oa["usage"]["completion_tokens"], 12) << oa;
    // A request's own fields win: n_predict, and temperature 0 is greedy whatever the seed.
    json greedy = plain;
    greedy["temperature"] = 0;
    greedy["n_predict"] = 5;
    const json g1 = post(s, "/completion", greedy);
    greedy["seed"] = 1234;
    const json g2 = post(s, "/completion", greedy);
    EXPECT_EQ(g1["tokens_predicted"], 5);
    EXPECT_EQ(g1["content"], g2["content"]);

    // Out of range at start: refused naming the flag.
    ServerProcess bad(server_args({"--top-p", "3"}));
    EXPECT_FALSE(bad.started());
    EXPECT_EQ(bad.wait_exit(30), 2);
    EXPECT_NE(bad.log().find("--top-p"), std::string::npos) << bad.log();
}

// Where OpenAI's API and llama-server's disagree, the server follows one dialect
// (--api-dialect), by default the command line's: one asking for llama-server's slots
// (--parallel) gets llama-server's answers. /metrics: served by default (OpenAI side, as vLLM),
// 501 unless --metrics in llama-server's; --no-metrics turns it off anywhere; /props says which.
// A Responses answer stopped by max_output_tokens: OpenAI's status "incomplete" and stream end
// response.incomplete, llama-server's "completed" and response.completed; usage either way.
TEST(ServerLlamaSettings, ApiDialectFollowsTheCommandLine) {
    struct Case {
        std::vector<std::string> args;
        bool metrics;
        bool llama_server;
    };
    const json responses = {{"input", "This is a test"}, {"max_output_tokens", 2}, {"ignore_eos", true}};
    for (const Case& c :
         {Case{{}, true, false}, Case{{"--parallel", "2"}, false, true},
          Case{{"--parallel", "2", "--metrics"}, true, true}, Case{{"--no-metrics"}, false, false},
          Case{{"--max-num-seqs", "2"}, true, false}, Case{{"--parallel", "2", "--api-dialect", "openai"}, true, false},
          Case{{"--api-dialect", "llama-server"}, false, true}}) {
        std::string name;
        for (const auto& a : c.args) name += a + " ";
        ServerProcess s(server_args(c.args));
        ASSERT_TRUE(s.started()) << s.log();
        const auto m = curl("GET", s.url("/metrics"));
        if (c.metrics) {
            EXPECT_EQ(m.status, 200) << name << m.body;
        } else {
            expect_api_error(m, 501, "not_implemented");
        }
        EXPECT_EQ(parse_or_null(curl("GET", s.url("/props")).body)["endpoint_metrics"], c.metrics) << name;

        const json whole = post(s, "/v1/responses", responses);
        EXPECT_EQ(whole["status"], c.llama_server ? "completed" : "incomplete") << name << whole;
        const json incomplete_details = c.llama_server ? json(nullptr) : json{{"reason", "max_output_tokens"}};
        EXPECT_EQ(whole["incomplete_details"], incomplete_details) << name << whole;
        EXPECT_EQ(whole["usage"]["output_tokens"], 2) << name << whole;

        json stream_body = responses;
        stream_body["stream"] = true;
        const auto r = curl("POST", s.url("/v1/responses"), stream_body.dump(), {"-N"});
        ASSERT_EQ(r.status, 200) << name << r.body;
        const size_t last_event = r.body.rfind("event: ");
        ASSERT_NE(last_event, std::string::npos) << name << r.body;
        const std::string event = r.body.substr(last_event + 7, r.body.find('\n', last_event) - last_event - 7);
        EXPECT_EQ(event, c.llama_server ? "response.completed" : "response.incomplete") << name << r.body;
        const size_t data = r.body.find("data: ", last_event);
        ASSERT_NE(data, std::string::npos) << name << r.body;
        const json end = parse_or_null(r.body.substr(data + 6, r.body.find('\n', data) - data - 6));
        EXPECT_EQ(end["type"], event) << name << end;
        EXPECT_EQ(end["response"]["status"], c.llama_server ? "completed" : "incomplete") << name << end;
        EXPECT_EQ(end["response"]["output"][0]["status"], c.llama_server ? "completed" : "incomplete") << name;
        EXPECT_EQ(end["response"]["usage"]["output_tokens"], 2) << name << end;
    }
    // A dialect lazyattn does not know is refused at start-up.
    ServerProcess bad(server_args({"--api-dialect", "vllm"}));
    EXPECT_EQ(bad.wait_exit(30), 2);
    EXPECT_NE(bad.log().find("--api-dialect"), std::string::npos) << bad.log();
}

// An empty Messages list is answered, as llama-server answers it (Anthropic's API refuses it):
// the template's text for no turns (SmolLM2's default system prompt and the assistant's opening).
TEST(ServerLlamaSettings, AnthropicEmptyMessagesAreAnswered) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    for (const json& extra : {json::object(), json{{"system", "Be brief."}}}) {
        json body = {{"model", "m"}, {"max_tokens", 4}, {"messages", json::array()}, {"temperature", 0}};
        body.update(extra);
        const auto r = curl("POST", s.url("/v1/messages"), body.dump());
        ASSERT_EQ(r.status, 200) << r.body;
        const json j = parse_or_null(r.body);
        EXPECT_EQ(j["type"], "message") << j;
        EXPECT_GT(j["usage"]["input_tokens"].get<int>(), 0) << j;
    }
    // Still a list: anything else is refused naming the field.
    const auto bad = curl("POST", s.url("/v1/messages"),
                          json{{"model", "m"}, {"max_tokens", 4}, {"messages", json::object()}}.dump());
    EXPECT_EQ(bad.status, 400) << bad.body;
    EXPECT_NE(bad.body.find("messages"), std::string::npos) << bad.body;
}

bool ipv6_loopback_available() {
    const int fd = ::socket(AF_INET6, SOCK_STREAM, 0);
    if (fd < 0) return false;
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

// --host a,b listens on each address, on one port.
TEST(ServerLlamaSettings, EachHostOfAListIsListenedOn) {
    if (!ipv6_loopback_available()) GTEST_SKIP() << "no IPv6 loopback";
    ServerProcess s(server_args({"--host", "127.0.0.1,::1"}));
    ASSERT_TRUE(s.started()) << s.log();
    const std::string port = std::to_string(s.port());
    EXPECT_EQ(curl("GET", "http://127.0.0.1:" + port + "/health").status, 200);
    EXPECT_EQ(curl("GET", "http://[::1]:" + port + "/health").status, 200);
    const auto r = curl("POST", "http://[::1]:" + port + "/v1/completions", completion_body(false));
    EXPECT_EQ(r.status, 200) << r.body;
}

}  // namespace
}  // namespace lazyattn::testing
