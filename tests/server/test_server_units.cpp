// The server's pieces without sockets: OpenAI request parsing and validation, the Status -> HTTP
// error mapping, SSE framing, Prometheus rendering, and the request builder (whose chat layout
// must equal build_rag_request's, so segment 0 and documents are cached the same way).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/loading/loaded_model.h"
#include "engine/request/rag_prompt.h"
#include "server/api_error.h"
#include "server/http_util.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/request_builder.h"
#include "server/sse.h"
#include "server_units_fixture.h"
#include "synthetic_model_fixture.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

std::optional<ApiError> parse(const json& body, bool chat, GenerationRequest* out = nullptr) {
    GenerationRequest r;
    auto e = parse_generation_request(body, chat, r);
    if (out) *out = r;
    return e;
}

TEST(OpenAiRequest, ReadsEveryFieldOfAChatRequest) {
    GenerationRequest r;
    const json body = {{"model", "m"},
                       {"messages",
                        {{{"role", "developer"}, {"content", "be brief"}},
                         {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "hi"}}}}}}},
                       {"documents", {"plain", {{"title", "T"}, {"text", "body"}}, {{"id", "abc"}}}},
                       {"temperature", 0.5},
                       {"top_p", 0.9},
                       {"top_k", 40},
                       {"min_p", 0.05},
                       {"repetition_penalty", 1.1},
                       {"seed", 42},
                       {"max_completion_tokens", 7},
                       {"stop", "\n"},
                       {"stream", true},
                       {"stream_options", {{"include_usage", true}}},
                       {"n", 1},
                       {"presence_penalty", 0}};
    ASSERT_FALSE(parse(body, true, &r));
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[0].role, "system");
    EXPECT_EQ(r.messages[1].content, "hi");
    ASSERT_EQ(r.documents.size(), 3u);
    EXPECT_EQ(r.documents[1].title, "T");
    EXPECT_TRUE(r.documents[2].by_id());
    EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
    EXPECT_EQ(r.sampling.top_k, 40);
    EXPECT_EQ(r.sampling.seed, 42u);
    EXPECT_TRUE(r.seed_given);
    EXPECT_EQ(r.max_tokens, 7);
    EXPECT_EQ(r.stop, std::vector<std::string>{"\n"});
    EXPECT_TRUE(r.stream && r.include_usage);
}

TEST(OpenAiRequest, PromptMayBeTextOrTokens) {
    GenerationRequest r;
    ASSERT_FALSE(parse({{"prompt", {"one"}}}, false, &r));
    EXPECT_EQ(r.prompt, "one");
    ASSERT_FALSE(parse({{"prompt", {1, 2, 3}}}, false, &r));
    EXPECT_EQ(r.prompt_tokens, (std::vector<int32_t>{1, 2, 3}));
    EXPECT_EQ(r.max_tokens, -1);
    EXPECT_FLOAT_EQ(r.sampling.temperature, 1.0f);  // OpenAI's default
}

TEST(OpenAiRequest, RefusesBadFieldsNamingThem) {
    struct Case {
        json body;
        bool chat;
        std::string param, code;
    };
    const json user = {{{"role", "user"}, {"content", "q"}}};
    const std::vector<Case> cases = {
        {{{"prompt", "p"}, {"temperature", -1}}, false, "temperature", "invalid_value"},
        {{{"prompt", "p"}, {"temperature", "x"}}, false, "temperature", "invalid_type"},
        {{{"prompt", "p"}, {"top_p", 2}}, false, "top_p", "invalid_value"},
        {{{"prompt", "p"}, {"max_tokens", -5}}, false, "max_tokens", "invalid_value"},
        {{{"prompt", "p"}, {"max_tokens", 1.5}}, false, "max_tokens", "invalid_type"},
        {{{"prompt", "p"}, {"n", 17}}, false, "n", "invalid_value"},
        {{{"prompt", "p"}, {"n", 0}}, false, "n", "invalid_value"},
        {{{"prompt", "p"}, {"best_of", 2}}, false, "best_of", "unsupported"},
        {{{"prompt", "p"}, {"frequency_penalty", 2.5}}, false, "frequency_penalty", "invalid_value"},
        {{{"prompt", "p"}, {"presence_penalty", -3}}, false, "presence_penalty", "invalid_value"},
        {{{"prompt", "p"}, {"max_tokens", 0}}, false, "max_tokens", "invalid_value"},  // 0 only with echo
        {{{"prompt", "p"}, {"stop", {"a", ""}}}, false, "stop", "invalid_value"},
        {{{"prompt", "p"}, {"logprobs", 21}}, false, "logprobs", "invalid_value"},
        {{{"prompt", "p"}, {"logprobs", true}}, false, "logprobs", "invalid_type"},
        {{{"messages", user}, {"logprobs", 3}}, true, "logprobs", "invalid_type"},
        {{{"messages", user}, {"top_logprobs", 2}}, true, "top_logprobs", "invalid_value"},  // needs logprobs
        {{{"messages", user}, {"logprobs", true}, {"top_logprobs", 21}}, true, "top_logprobs", "invalid_value"},
        {{{"messages", user}, {"echo", true}}, true, "echo", "unsupported"},
        {{{"prompt", ""}}, false, "prompt", "invalid_value"},
        {{{"prompt", {"a", "b"}}}, false, "prompt", "invalid_value"},
        {{{"max_tokens", 3}}, false, "prompt", "missing_required_parameter"},
        {{{"messages", json::array()}}, true, "messages", "invalid_value"},
        {{{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}, true, "messages[0].role", "invalid_value"},
        {{{"messages", {{{"role", "assistant"}, {"content", "x"}}}}}, true, "messages", "invalid_value"},
        {{{"messages", user}, {"documents", {json::object()}}}, true, "documents[0]", "invalid_value"},
        {{{"messages", user}, {"stream", "yes"}}, true, "stream", "invalid_type"},
        {{{"prompt", "p"}, {"document_reuse", "anchor+warp"}}, false, "document_reuse", "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"logit_scale", 100}}}},
         false,
         "document_reuse.logit_scale",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"logit_bias", "x"}}}},
         false,
         "document_reuse.logit_bias",
         "invalid_type"},
        {{{"prompt", "p"}, {"document_reuse", {{"anchored", 1}}}}, false, "document_reuse.anchored", "invalid_type"},
        {{{"prompt", "p"}, {"document_reuse", {{"recompute_tokens", -1}}}},
         false,
         "document_reuse.recompute_tokens",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"recompute", 4097}}}},
         false,
         "document_reuse.recompute",
         "invalid_value"},
        // Past int32 saturates (and is refused), never wraps into range: 2^32 + 16 is not 16.
        {{{"prompt", "p"}, {"document_reuse", {{"recompute", {{"tokens", 4294967312LL}}}}}},
         false,
         "document_reuse.recompute.tokens",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"neighbours", 18446744073709551615ULL}}}},
         false,
         "document_reuse.neighbours",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"recompute", {{"tokens", 0}, {"select", "random"}}}}}},
         false,
         "document_reuse.recompute.select",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"recompute_tokens", 16}, {"recompute", 16}}}},
         false,
         "document_reuse",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"recompute", {{"share", 1.5}}}}}},
         false,
         "document_reuse.recompute.share",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"recompute", {{"share", 0.1}, {"select", "best"}}}}}},
         false,
         "document_reuse.recompute.select",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"recompute", {{"tokens", 4097}}}}}},
         false,
         "document_reuse.recompute.tokens",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"recompute", {{"tokens", 4}, {"share", 0.5}}}}}},
         false,
         "document_reuse.recompute",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"recompute", "all"}}}},
         false,
         "document_reuse.recompute",
         "invalid_type"},
        {{{"prompt", "p"}, {"document_reuse", "recompute=0%@random"}}, false, "document_reuse", "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", "recompute=15%@best"}}, false, "document_reuse", "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", 5}}, false, "document_reuse", "invalid_type"},
        {{{"prompt", "p"}, {"document_reuse", {{"neighbours", 9}}}},
         false,
         "document_reuse.neighbours",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"neighbours", "2"}}}},
         false,
         "document_reuse.neighbours",
         "invalid_type"},
        {{{"prompt", "p"}, {"document_reuse", {{"neighbours", 2}, {"anchored", true}}}},
         false,
         "document_reuse",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", "neighbours=100"}}, false, "document_reuse", "invalid_value"},
        // Damped document sinks: both fields, each range named; not with private recomputed rows.
        {{{"prompt", "p"}, {"document_reuse", {{"damp", {{"tokens", 16}, {"bias", 1}}}}}},
         false,
         "document_reuse.damp.bias",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"damp", {{"tokens", 16}, {"bias", -40}}}}}},
         false,
         "document_reuse.damp.bias",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"damp", {{"tokens", 0}, {"bias", -2}}}}}},
         false,
         "document_reuse.damp.tokens",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"damp", {{"tokens", 4294967312LL}, {"bias", -2}}}}}},
         false,
         "document_reuse.damp.tokens",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"damp", {{"tokens", "16"}, {"bias", -2}}}}}},
         false,
         "document_reuse.damp.tokens",
         "invalid_type"},
        {{{"prompt", "p"}, {"document_reuse", {{"damp", {{"tokens", 16}, {"bias", "-2"}}}}}},
         false,
         "document_reuse.damp.bias",
         "invalid_type"},
        {{{"prompt", "p"}, {"document_reuse", {{"damp", {{"tokens", 16}}}}}},
         false,
         "document_reuse.damp",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"damp", {{"tokens", 16}, {"bias", -2}, {"share", 1}}}}}},
         false,
         "document_reuse.damp",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", {{"damp", 16}}}}, false, "document_reuse.damp", "invalid_type"},
        {{{"prompt", "p"},
          {"document_reuse", {{"damp", {{"tokens", 16}, {"bias", -2}}}, {"recompute", {{"share", 0.1}}}}}},
         false,
         "document_reuse",
         "invalid_value"},
        {{{"prompt", "p"}, {"document_reuse", "damp=16:3"}}, false, "document_reuse", "invalid_value"},
        {{{"messages", user}, {"stream_options", {{"include_usage", 1}}}},
         true,
         "stream_options.include_usage",
         "invalid_type"},
    };
    for (const auto& c : cases) {
        auto e = parse(c.body, c.chat);
        ASSERT_TRUE(e.has_value()) << c.body;
        EXPECT_EQ(e->http_status, 400) << c.body;
        EXPECT_EQ(e->param, c.param) << c.body;
        EXPECT_EQ(e->code, c.code) << c.body;
    }
}

TEST(ApiError, EngineStatusesMapToTheirHttpStatus) {
    EXPECT_EQ(api_error_from_status(invalid_argument("x")).http_status, 400);
    EXPECT_EQ(api_error_from_status(out_of_range("x")).code, "context_length_exceeded");
    // The status code decides, never the wording: a full queue is kUnavailable.
    EXPECT_EQ(api_error_from_status(unavailable("the queue is full (4 waiting requests)")).http_status, 429);
    EXPECT_EQ(api_error_from_status(resource_exhausted("the queue is full")).http_status, 400);
    EXPECT_EQ(api_error_from_status(resource_exhausted("request needs up to 9 KV blocks")).http_status, 400);
    EXPECT_EQ(api_error_from_status(not_found("x")).http_status, 404);
    EXPECT_EQ(api_error_from_status(Status(StatusCode::kCancelled, "x")).http_status, 503);
    EXPECT_EQ(api_error_from_status(internal_error("x")).http_status, 500);
    const json j = json::parse(invalid_request("bad", "top_p", "invalid_value").to_json());
    EXPECT_EQ(j, json({{"error",
                        {{"message", "bad"},
                         {"type", "invalid_request_error"},
                         {"param", "top_p"},
                         {"code", "invalid_value"}}}}));
    EXPECT_TRUE(json::parse(ApiError{}.to_json())["error"]["param"].is_null());
}

TEST(Sse, FramesEventsAndSplitsLines) {
    EXPECT_EQ(sse_event("{\"a\":1}"), "data: {\"a\":1}\n\n");
    EXPECT_EQ(sse_event("x\ny"), "data: x\ndata: y\n\n");
    EXPECT_EQ(std::string(kSseDone), "data: [DONE]\n\n");
}

TEST(Metrics, RendersPrometheusText) {
    Metrics m("my \"model\"");
    m.count_request("/v1/completions", 200);
    m.count_request("/v1/completions", 200);
    m.count_request("/v1/documents/abc", 404);
    m.count_request("/no/such/thing", 404);
    engine::RequestStats rs;
    rs.num_prompt_tokens = 10;
    rs.reused_tokens = 6;
    rs.num_generated = 4;
    rs.ttft_ms = 20;
    rs.queue_ms = 400;
    m.record_request(rs, engine::FinishReason::kStop, 1.2);
    rs.ttft_ms = 3000;
    m.record_request(rs, engine::FinishReason::kLength, 4);
    m.record_request(rs, engine::FinishReason::kCancelled, 4);  // counted, but no latency observed for it
    m.observe_inter_token(0.03);
    engine::SchedulerStats s;
    s.blocks_used = 3;
    s.blocks_total = 12;
    s.segment_hits = 5;
    s.segment_misses = 2;
    engine::EngineHealth h;
    h.num_waiting = 7;
    h.num_running = 2;
    const std::string text = m.render(s, h);
    const std::string ml = "model_name=\"my \\\"model\\\"\"";  // label values escape quotes
    for (const std::string& line : std::vector<std::string>{
             "lazyattn_http_requests_total{" + ml + ",route=\"/v1/completions\",status=\"200\"} 2",
             "lazyattn_http_requests_total{" + ml + ",route=\"/v1/documents/{id}\",status=\"404\"} 1",
             "lazyattn_http_requests_total{" + ml + ",route=\"other\",status=\"404\"} 1",
             "lazyattn_time_to_first_token_seconds_bucket{" + ml + ",le=\"0.02\"} 1",
             "lazyattn_time_to_first_token_seconds_bucket{" + ml + ",le=\"5\"} 2",
             "lazyattn_time_to_first_token_seconds_bucket{" + ml + ",le=\"+Inf\"} 2",
             "lazyattn_time_to_first_token_seconds_count{" + ml + "} 2",
             "lazyattn_request_queue_time_seconds_count{" + ml + "} 2",
             "lazyattn_e2e_request_latency_seconds_sum{" + ml + "} 5.2",
             "lazyattn_inter_token_latency_seconds_count{" + ml + "} 1",
             "lazyattn_request_success_total{" + ml + ",finished_reason=\"stop\"} 1",
             "lazyattn_request_success_total{" + ml + ",finished_reason=\"length\"} 1",
             "lazyattn_request_success_total{" + ml + ",finished_reason=\"abort\"} 1",
             "lazyattn_prompt_tokens_total{" + ml + "} 30",
             "lazyattn_prefix_cache_queries_total{" + ml + "} 30",
             "lazyattn_prefix_cache_hits_total{" + ml + "} 18",
             "lazyattn_generation_tokens_total{" + ml + "} 12",
             "lazyattn_num_requests_waiting{" + ml + "} 7",
             "lazyattn_num_requests_running{" + ml + "} 2",
             "lazyattn_kv_cache_usage_perc{" + ml + "} 0.25",
             "lazyattn_document_lookups_total{" + ml + "} 7",
             "lazyattn_kv_blocks_used{" + ml + "} 3",
             "# TYPE lazyattn_kv_blocks_used gauge"}) {
        EXPECT_NE(text.find(line + "\n"), std::string::npos) << line << "\n" << text;
    }
}

class RequestBuilderTest : public ServerUnitsModel {
protected:
    RequestBuilder builder(DocumentLookup lookup = {}, int32_t max_tokens_cap = 4096,
                           engine::DocumentReuse reuse = {}) const {
        return RequestBuilder(*model_->tokenizer, chat_, 512, max_tokens_cap, std::move(lookup), reuse);
    }
};

TEST_F(RequestBuilderTest, ChatLayoutEqualsBuildRagRequest) {
    GenerationRequest g;
    g.chat = true;
    g.messages = {{"system", "You answer from the documents."}, {"user", "Who won?"}};
    g.documents = {{"first passage", "Doc A", {}, ""}, {"second passage", "", {}, ""}};
    auto got = builder().build(g, "");
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    engine::RagPromptText text{
        "You answer from the documents.",
        {engine::format_document("Doc A", "first passage"), engine::format_document("", "second passage")},
        "Who won?"};
    auto want = engine::build_rag_request(*model_->tokenizer, chat_, text);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(got->segments, want->segments);
    EXPECT_EQ(got->tail, want->tail);
    EXPECT_EQ(got->max_tokens, 512);  // chat default: the rest of the context
}

TEST_F(RequestBuilderTest, ConversationHistoryGoesToSegmentZeroAndTheLastQuestionToTheTail) {
    GenerationRequest g;
    g.chat = true;
    g.messages = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Who won?"}};
    g.documents = {{"a passage", "", {}, ""}};
    auto got = builder().build(g, "");
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    ASSERT_EQ(got->segments.size(), 2u);
    const auto& tok = *model_->tokenizer;
    const std::string rendered = *chat_.apply(g.messages, true);
    const std::string head = tok.decode(got->segments[0], true), tail = tok.decode(got->tail, true);
    EXPECT_EQ(head, rendered.substr(0, rendered.find("Who won?")));
    EXPECT_EQ(tail, rendered.substr(rendered.find("Who won?")));
    EXPECT_EQ(tok.decode(got->segments[1]), "a passage\n\n");
}

TEST_F(RequestBuilderTest, CompletionPutsDocumentsBeforeThePromptAndResolvesIds) {
    const std::vector<int32_t> cached = {5, 6, 7};
    auto b = builder([&](const std::string& tenant, const std::string& id) -> std::optional<std::vector<int32_t>> {
        if (tenant == "t1" && id == "known") return cached;
        return std::nullopt;
    });
    GenerationRequest g;
    g.prompt = "the question";
    g.documents = {{"a passage", "", {}, ""}, {"", "", {}, "known"}};
    auto got = b.build(g, "t1");
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(got->tenant, "t1");
    EXPECT_EQ(b.build(g, "t2").status().code(), StatusCode::kNotFound);  // ids resolve in the caller's tenant only
    ASSERT_EQ(got->segments.size(), 2u);
    EXPECT_EQ(got->segments[0], b.document_tokens(g.documents[0]));
    EXPECT_EQ(got->segments[1], cached);
    EXPECT_EQ(got->tail, model_->tokenizer->encode("the question", false, false));
    EXPECT_EQ(got->max_tokens, 16);  // OpenAI's completions default
    g.documents[1].id = "unknown";
    EXPECT_EQ(b.build(g, "t1").status().code(), StatusCode::kNotFound);
}

TEST_F(RequestBuilderTest, DocumentReuseComesFromTheRequestOrTheServerDefault) {
    GenerationRequest chat;
    ASSERT_FALSE(parse({{"messages", {{{"role", "user"}, {"content", "q"}}}},
                        {"documents", {"a passage"}},
                        {"document_reuse", {{"anchored", true}, {"logit_bias", -1.5}}}},
                       true, &chat));
    auto a = builder().build(chat, "");
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    EXPECT_TRUE(a->reuse.anchored);
    EXPECT_FLOAT_EQ(a->reuse.logit_bias, -1.5f);
    // The recompute budget in object form: a share and a selection, as the string form has them.
    GenerationRequest sparse;
    ASSERT_FALSE(parse({{"messages", {{{"role", "user"}, {"content", "q"}}}},
                        {"documents", {"a passage"}},
                        {"document_reuse", {{"recompute", {{"share", 0.15}, {"select", "random"}}}}}},
                       true, &sparse));
    auto s = builder().build(sparse, "");
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    EXPECT_DOUBLE_EQ(s->reuse.recompute_share, 0.15);
    EXPECT_EQ(s->reuse.recompute_select, engine::RecomputeSelect::kRandom);
    EXPECT_EQ(s->reuse, *engine::parse_document_reuse("recompute=15%@random"));
    // Damped document sinks in object form, beside first-token recompute: as the string form.
    GenerationRequest damped;
    ASSERT_FALSE(parse({{"messages", {{{"role", "user"}, {"content", "q"}}}},
                        {"documents", {"a passage"}},
                        {"document_reuse", {{"recompute", 16}, {"damp", {{"tokens", 32}, {"bias", -2.5}}}}}},
                       true, &damped));
    auto dr = builder().build(damped, "");
    ASSERT_TRUE(dr.ok()) << dr.status().to_string();
    EXPECT_EQ(dr->reuse.damp_tokens, 32);
    EXPECT_FLOAT_EQ(dr->reuse.damp_bias, -2.5f);
    EXPECT_EQ(dr->reuse, *engine::parse_document_reuse("recompute=16+damp=32:-2.5"));
    // Neighbour-conditioned copies, with question-guided recompute on top.
    GenerationRequest conditioned;
    ASSERT_FALSE(parse({{"messages", {{{"role", "user"}, {"content", "q"}}}},
                        {"documents", {"a passage"}},
                        {"document_reuse", {{"neighbours", 2}, {"recompute", {{"share", 0.15}, {"select", "query"}}}}}},
                       true, &conditioned));
    auto n = builder().build(conditioned, "");
    ASSERT_TRUE(n.ok()) << n.status().to_string();
    EXPECT_EQ(n->reuse, *engine::parse_document_reuse("neighbours=2+recompute=15%@query"));
    // A budget of 0 is none in every form, as "recompute=0" is.
    for (const json& none : {json{{"recompute", 0}}, json{{"recompute", {{"tokens", 0}}}},
                             json{{"recompute", {{"share", 0}}}}, json{{"recompute_tokens", 0}}}) {
        GenerationRequest zero;
        ASSERT_FALSE(parse({{"prompt", "p"}, {"document_reuse", none}}, false, &zero)) << none;
        ASSERT_TRUE(zero.document_reuse.has_value()) << none;
        EXPECT_TRUE(zero.document_reuse->is_plain()) << none;
    }
    engine::DocumentReuse server_default;
    server_default.anchored = true;
    server_default.logit_scale = 1.25f;
    chat.document_reuse.reset();
    auto b = builder({}, 4096, server_default).build(chat, "");
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(b->reuse, server_default);
    // A completion without a preamble keeps the default's rescaling but cannot be anchored; had
    // it asked for anchoring itself, the engine refuses it (tested with the engine).
    GenerationRequest completion;
    ASSERT_FALSE(parse({{"prompt", "q"}, {"documents", {"a passage"}}}, false, &completion));
    auto c = builder({}, 4096, server_default).build(completion, "");
    ASSERT_TRUE(c.ok());
    EXPECT_FALSE(c->first_segment_is_preamble);
    EXPECT_FALSE(c->reuse.anchored);
    EXPECT_FLOAT_EQ(c->reuse.logit_scale, 1.25f);
}

TEST_F(RequestBuilderTest, MaxTokensNeverExceedsTheCap) {
    GenerationRequest g;
    g.chat = true;
    g.messages = {{"user", "Who won?"}};
    EXPECT_EQ(builder({}, 7).build(g, "")->max_tokens, 7);  // chat default (rest of the context) clamped
    g.max_tokens = 100;
    EXPECT_EQ(builder({}, 7).build(g, "")->max_tokens, 7);
    g.max_tokens = 3;
    EXPECT_EQ(builder({}, 7).build(g, "")->max_tokens, 3);
}

TEST_F(RequestBuilderTest, TextThatCannotFitIsRefusedByItsSize) {
    const RequestBuilder b = builder();
    ASSERT_GE(b.max_token_bytes(), 1);
    // The bound is sound: text right under it tokenizes, text over it could never fit.
    EXPECT_TRUE(b.may_fit_context(size_t(511) * size_t(b.max_token_bytes())));
    EXPECT_FALSE(b.may_fit_context(size_t(512) * size_t(b.max_token_bytes())));
    GenerationRequest g;
    g.prompt = std::string(size_t(512) * size_t(b.max_token_bytes()), 'a');
    auto r = b.build(g, "");
    EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
    // Every token of the vocabulary is at most max_token_bytes long, so the shortcut never
    // refuses text that would fit: a text of n longest tokens tokenizes to at most n tokens.
    for (int32_t id = 0; id < model_->tokenizer->vocab_size(); ++id) {
        EXPECT_LE(int32_t(model_->tokenizer->token_to_piece(id, false).size()), b.max_token_bytes());
    }
}

TEST(JsonDepth, CountsNestingOutsideStringsOnly) {
    EXPECT_EQ(json_nesting_depth(R"({"a": [1, {"b": 2}]})", 32), 3);
    EXPECT_EQ(json_nesting_depth(R"({"a": "[[[[[[{{{{"})", 32), 1);
    EXPECT_EQ(json_nesting_depth(R"({"a": "\"[[[[["})", 32), 1);
    EXPECT_EQ(json_nesting_depth(std::string(1000, '[') + std::string(1000, ']'), 32), 33);
    EXPECT_EQ(json_nesting_depth("12", 32), 0);
}

TEST(JsonDepth, ValueEndFollowsStringsAndWaitsForTheClose) {
    const std::string call = R"(x {"a": "}]\"}", "b": [1, {"c": 2}]} tail)";
    EXPECT_EQ(json_value_end(call, 2), call.find(" tail"));
    EXPECT_EQ(json_value_end(R"({"a": "}")", 0), std::string_view::npos);    // still open
    EXPECT_EQ(json_value_end(R"({"a": "\"}")", 0), std::string_view::npos);  // the quote is escaped
    EXPECT_EQ(json_value_end("[[]]]", 0), 4u);
    EXPECT_EQ(json_value_end("]", 0), 1u);  // unbalanced: ends where it breaks
}

}  // namespace
}  // namespace lazyattn::server
