// llama-server's native /completion API as units: the body parser (every field, every bad type a
// 400 naming the field) and the response renderer (whole and streamed shapes, stop_type,
// timings, completion_probabilities with byte pieces, response_fields).
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/utf8.h"
#include "server/native_renderer.h"
#include "server/native_request.h"
#include "server/sse.h"
#include "server_units_fixture.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

class NativeApi : public ServerUnitsModel {
protected:
    const tokenizer::Tokenizer& tok() const { return *model_->tokenizer; }

    NativeRequest parse_ok(json body, int32_t slots = 4) {
        if (!body.contains("prompt")) body["prompt"] = "the cat sat";
        NativeRequest r;
        auto e = parse_native_request(body, tok(), slots, r);
        EXPECT_FALSE(e.has_value()) << body << " -> " << (e ? e->to_json() : "");
        return r;
    }

    // The body is refused with a 400 naming `param`.
    void expect_refused(json body, const std::string& param, int32_t slots = 4) {
        if (!body.contains("prompt")) body["prompt"] = "the cat sat";
        NativeRequest r;
        auto e = parse_native_request(body, tok(), slots, r);
        ASSERT_TRUE(e.has_value()) << body;
        EXPECT_EQ(e->http_status, 400) << body;
        EXPECT_EQ(e->param, param) << body << " -> " << e->to_json();
        EXPECT_FALSE(e->message.empty());
    }
};

TEST_F(NativeApi, PromptShapes) {
    auto text = parse_ok({{"prompt", "hello world"}});
    ASSERT_EQ(text.prompts.size(), 1u);
    EXPECT_EQ(text.prompts[0].text, "hello world");
    EXPECT_FALSE(text.prompt_list);

    auto ids = parse_ok({{"prompt", {5, 6, 7}}});
    EXPECT_EQ(ids.prompts[0].tokens, (std::vector<int32_t>{5, 6, 7}));

    // Strings inside a list of ids are tokenized where they sit.
    auto mixed = parse_ok({{"prompt", {5, "hello", 7}}});
    const auto hello = tok().encode("hello", false, false);
    std::vector<int32_t> want = {5};
    want.insert(want.end(), hello.begin(), hello.end());
    want.push_back(7);
    EXPECT_EQ(mixed.prompts[0].tokens, want);
    EXPECT_FALSE(mixed.prompt_list);

    auto object = parse_ok({{"prompt", {{"prompt_string", "hi there"}}}});
    EXPECT_EQ(object.prompts[0].text, "hi there");

    // A list without numbers is a list of prompts: strings, ids, objects.
    auto list = parse_ok({{"prompt", json::array({"one", json::array({1, 2}), {{"prompt_string", "three"}}})}});
    ASSERT_EQ(list.prompts.size(), 3u);
    EXPECT_TRUE(list.prompt_list);
    EXPECT_EQ(list.prompts[1].tokens, (std::vector<int32_t>{1, 2}));
    EXPECT_EQ(list.request_for(2).prompt, "three");
    EXPECT_TRUE(list.request_for(1).prompt.empty());
    // A list of one prompt is answered as that prompt.
    EXPECT_FALSE(parse_ok({{"prompt", {"only"}}}).prompt_list);
}

TEST_F(NativeApi, BadPromptsNameTheField) {
    expect_refused({{"prompt", 5}}, "prompt");
    expect_refused({{"prompt", true}}, "prompt");
    expect_refused({{"prompt", ""}}, "prompt");
    expect_refused({{"prompt", json::array()}}, "prompt");
    expect_refused({{"prompt", {1, -2}}}, "prompt");
    expect_refused({{"prompt", {1, 1 << 30}}}, "prompt");
    expect_refused({{"prompt", {1, json::object()}}}, "prompt");
    expect_refused({{"prompt", {"a", 5.5}}}, "prompt");  // a number: one mixed prompt, and 5.5 is no id
    expect_refused({{"prompt", {"a", true}}}, "prompt[1]");
    expect_refused({{"prompt", {{"prompt_string", 3}}}}, "prompt.prompt_string");
    expect_refused({{"prompt", json::object()}}, "prompt.prompt_string");
    expect_refused({{"prompt", {{"prompt_string", "x <__media__>"}, {"multimodal_data", {"iVBOR"}}}}},
                   "prompt.multimodal_data");
    expect_refused({{"prompt", "\xff\xfe"}}, "prompt");
    json many = json::array();
    for (int i = 0; i <= kMaxNativePrompts; ++i) many.push_back("p");
    expect_refused({{"prompt", many}}, "prompt");
    json body = {{"stream", true}, {"prompt", {"a", "b"}}};
    expect_refused(body, "stream");
    NativeRequest r;
    EXPECT_EQ(parse_native_request(json::array({1}), tok(), 1, r)->http_status, 400);
    auto missing = parse_native_request(json::object(), tok(), 1, r);
    ASSERT_TRUE(missing.has_value());
    EXPECT_EQ(missing->param, "prompt");
}

TEST_F(NativeApi, NPredict) {
    EXPECT_EQ(parse_ok({{"n_predict", 8}}).base.max_tokens, 8);
    EXPECT_EQ(parse_ok({{"n_predict", 8}}).options.n_predict, 8);
    EXPECT_EQ(parse_ok({{"n_predict", -1}}).base.max_tokens, -1);
    EXPECT_EQ(parse_ok(json::object()).base.max_tokens, -1);
    expect_refused({{"n_predict", 0}}, "n_predict");
    expect_refused({{"n_predict", -5}}, "n_predict");
    expect_refused({{"n_predict", "8"}}, "n_predict");
    expect_refused({{"n_predict", 1.5}}, "n_predict");
}

TEST_F(NativeApi, Sampling) {
    auto r = parse_ok({{"temperature", 0.5},
                       {"top_k", 12},
                       {"top_p", 0.9},
                       {"min_p", 0.1},
                       {"seed", 42},
                       {"repeat_penalty", 1.1},
                       {"repeat_last_n", 32},
                       {"presence_penalty", 0.5},
                       {"frequency_penalty", 0.25},
                       {"stop", {"\n", "END"}},
                       {"ignore_eos", true}});
    const auto& s = r.base.sampling;
    EXPECT_FLOAT_EQ(s.temperature, 0.5f);
    EXPECT_EQ(s.top_k, 12);
    EXPECT_FLOAT_EQ(s.top_p, 0.9f);
    EXPECT_FLOAT_EQ(s.min_p, 0.1f);
    EXPECT_TRUE(r.base.seed_given);
    EXPECT_EQ(s.seed, 42u);
    EXPECT_FLOAT_EQ(s.repetition_penalty, 1.1f);
    EXPECT_EQ(s.repeat_last_n, 32);
    EXPECT_FLOAT_EQ(s.presence_penalty, 0.5f);
    EXPECT_FLOAT_EQ(s.frequency_penalty, 0.25f);
    EXPECT_EQ(r.base.stop, (std::vector<std::string>{"\n", "END"}));
    EXPECT_TRUE(r.base.ignore_eos);
    // llama-server's "off" values.
    auto off = parse_ok({{"temperature", -1}, {"top_k", -1}, {"seed", -1}, {"repeat_last_n", -1}});
    EXPECT_EQ(off.base.sampling.temperature, 0.0f);
    EXPECT_EQ(off.base.sampling.top_k, 0);
    EXPECT_FALSE(off.base.seed_given);
    EXPECT_EQ(off.base.sampling.repeat_last_n, INT32_MAX);
    EXPECT_FALSE(parse_ok({{"seed", 4294967295ll}}).base.seed_given);

    expect_refused({{"temperature", "hot"}}, "temperature");
    expect_refused({{"temperature", 5}}, "temperature");
    expect_refused({{"top_k", 1.5}}, "top_k");
    expect_refused({{"top_p", 2}}, "top_p");
    expect_refused({{"min_p", "x"}}, "min_p");
    expect_refused({{"seed", "x"}}, "seed");
    expect_refused({{"repeat_penalty", -1}}, "repeat_penalty");
    expect_refused({{"repeat_penalty", "x"}}, "repeat_penalty");
    expect_refused({{"repeat_last_n", -2}}, "repeat_last_n");
    expect_refused({{"repeat_last_n", "x"}}, "repeat_last_n");
    expect_refused({{"presence_penalty", 9}}, "presence_penalty");
    expect_refused({{"stop", 5}}, "stop");
    expect_refused({{"stop", {""}}}, "stop");
    expect_refused({{"ignore_eos", "yes"}}, "ignore_eos");
    expect_refused({{"stream", 1}}, "stream");
}

TEST_F(NativeApi, LogitBiasForms) {
    // [[id, bias]], {"id": bias}, [[text, bias]] (every token of the text), false = never.
    auto pairs = parse_ok({{"logit_bias", {{5, -1.5}, {6, false}}}});
    ASSERT_EQ(pairs.base.sampling.logit_bias.size(), 2u);
    EXPECT_EQ(pairs.base.sampling.logit_bias[0], (std::pair<int32_t, float>{5, -1.5f}));
    EXPECT_EQ(pairs.base.sampling.logit_bias[1], (std::pair<int32_t, float>{6, -100.0f}));
    auto object = parse_ok({{"logit_bias", {{"7", 2}}}});
    ASSERT_EQ(object.base.sampling.logit_bias.size(), 1u);
    EXPECT_EQ(object.base.sampling.logit_bias[0].first, 7);
    const auto hello = tok().encode(" hello ", false, false);
    auto text = parse_ok({{"logit_bias", {{" hello ", -100}}}});
    EXPECT_EQ(text.base.sampling.logit_bias.size(), hello.size());
    auto text_key = parse_ok({{"logit_bias", {{" hello ", -100}}}});
    EXPECT_EQ(text_key.base.sampling.logit_bias.size(), hello.size());

    expect_refused({{"logit_bias", 5}}, "logit_bias");
    expect_refused({{"logit_bias", {{5}}}}, "logit_bias");
    expect_refused({{"logit_bias", {{5, "x"}}}}, "logit_bias");
    expect_refused({{"logit_bias", {{5, true}}}}, "logit_bias");
    expect_refused({{"logit_bias", {{5, 1000}}}}, "logit_bias");
    expect_refused({{"logit_bias", {{tok().vocab_size(), 1}}}}, "logit_bias");
    expect_refused({{"logit_bias", {{-1, 1}}}}, "logit_bias");
    expect_refused({{"logit_bias", {{json::object(), 1}}}}, "logit_bias");
    expect_refused({{"logit_bias", {{"99999999999", 1}}}}, "logit_bias");
    json big = json::array();
    for (int i = 0; i <= kMaxLogitBias; ++i) big.push_back({1, 1});
    expect_refused({{"logit_bias", big}}, "logit_bias");
}

TEST_F(NativeApi, NativeOnlyFields) {
    auto r = parse_ok({{"n_probs", 10},
                       {"return_tokens", true},
                       {"id_slot", 1},
                       {"cache_prompt", false},
                       {"samplers", {"top_k", "temperature", "min-p"}},
                       {"response_fields", {"content", "generation_settings/n_predict"}},
                       {"timings_per_token", true}});
    EXPECT_EQ(r.options.n_probs, 10);
    EXPECT_EQ(r.base.logprobs, 10);
    EXPECT_TRUE(r.options.return_tokens);
    EXPECT_EQ(r.options.id_slot, 1);
    EXPECT_EQ(r.options.samplers.size(), 3u);
    EXPECT_EQ(r.options.response_fields.size(), 2u);
    EXPECT_EQ(parse_ok({{"samplers", "kypmt"}}).options.samplers.size(), 5u);
    EXPECT_EQ(parse_ok({{"n_probs", 0}}).base.logprobs, -1);
    // llama-server's telemetry and post-sampling probabilities reach the request.
    EXPECT_TRUE(r.base.timings_per_token);
    const auto t = parse_ok({{"post_sampling_probs", true}, {"return_progress", true}, {"verbose", false}});
    EXPECT_TRUE(t.options.post_sampling_probs);
    EXPECT_TRUE(t.base.sampling.post_sampling_probs);
    EXPECT_TRUE(t.base.return_progress);
    EXPECT_EQ(t.base.verbose, std::optional<bool>(false));
    EXPECT_FALSE(parse_ok(json::object()).base.verbose.has_value());
    EXPECT_FALSE(parse_ok(json::object()).base.sampling.post_sampling_probs);
    expect_refused({{"post_sampling_probs", "yes"}}, "post_sampling_probs");
    expect_refused({{"timings_per_token", 1}}, "timings_per_token");
    expect_refused({{"return_progress", "x"}}, "return_progress");
    expect_refused({{"verbose", 1}}, "verbose");

    expect_refused({{"n_probs", 21}}, "n_probs");
    expect_refused({{"n_probs", -1}}, "n_probs");
    expect_refused({{"n_probs", "5"}}, "n_probs");
    expect_refused({{"return_tokens", 1}}, "return_tokens");
    expect_refused({{"cache_prompt", "yes"}}, "cache_prompt");
    expect_refused({{"id_slot", 4}}, "id_slot", 4);
    expect_refused({{"id_slot", -2}}, "id_slot");
    expect_refused({{"id_slot", "0"}}, "id_slot");
    expect_refused({{"samplers", {"bogus"}}}, "samplers");
    expect_refused({{"samplers", "kq"}}, "samplers");
    expect_refused({{"samplers", 5}}, "samplers");
    expect_refused({{"response_fields", "content"}}, "response_fields");
    expect_refused({{"response_fields", {1}}}, "response_fields");
}

// Fields that change the output and lazyattn cannot honour: a 400 naming them, unless no-op.
TEST_F(NativeApi, UnhonouredFieldsAreRefusedByName) {
    const json refused = {{"mirostat", 2},
                          {"dry_multiplier", 0.8},
                          {"xtc_probability", 0.5},
                          {"typical_p", 0.5},
                          {"dynatemp_range", 0.5},
                          {"top_n_sigma", 1.0},
                          {"adaptive_target", 0.5},
                          {"min_keep", 3},
                          {"n_indent", 4},
                          {"t_max_predict_ms", 100},
                          {"lora", {{{"id", 0}, {"scale", 1.0}}}},
                          {"n_cmpl", 2},
                          {"n", 2}};
    for (const auto& [key, value] : refused.items()) {
        SCOPED_TRACE(key);
        expect_refused({{key, value}}, key);
    }
    // Their no-op values, and fields that change nothing here, are accepted.
    parse_ok({{"mirostat", 0},
              {"mirostat_tau", 5.0},
              {"dry_multiplier", 0},
              {"dry_base", 1.75},
              {"xtc_probability", 0},
              {"xtc_threshold", 0.1},
              {"typical_p", 1.0},
              {"top_n_sigma", -1},
              {"adaptive_target", -1},
              {"grammar", ""},
              {"json_schema", json::object()},  // structured output: compiled later, by the front
              {"lora", json::array()},
              {"n_keep", 10},
              {"n_cmpl", 1}});
    expect_refused({{"mirostat", "x"}}, "mirostat");
}

TEST_F(NativeApi, DocumentsAndSalt) {
    auto r = parse_ok({{"documents", {"gold is a metal", {{"text", "silver"}, {"title", "S"}}}},
                       {"cache_salt", "tenant-a"},
                       {"document_reuse", "anchor+bias=-1"}});
    ASSERT_EQ(r.base.documents.size(), 2u);
    EXPECT_EQ(r.base.documents[1].title, "S");
    EXPECT_EQ(r.base.cache_salt, "tenant-a");
    EXPECT_TRUE(r.base.document_reuse.has_value());
    EXPECT_EQ(r.request_for(0).documents.size(), 2u);
    expect_refused({{"documents", 5}}, "documents");
    expect_refused({{"documents", {5}}}, "documents[0]");
    expect_refused({{"cache_salt", 5}}, "cache_salt");
    expect_refused({{"cache_salt", std::string(kMaxCacheSaltBytes + 1, 'x')}}, "cache_salt");
}

// ---- renderer ----------------------------------------------------------------------------

engine::RequestStats sample_stats() {
    engine::RequestStats st;
    st.num_prompt_tokens = 20;
    st.reused_tokens = 8;
    st.num_generated = 4;
    st.queue_ms = 2;
    st.ttft_ms = 12;
    st.decode_ms = 40;
    return st;
}

TEST(NativeRender, StopTypeAndTimings) {
    EXPECT_EQ(native_stop_type(engine::FinishReason::kLength, ""), "limit");
    EXPECT_EQ(native_stop_type(engine::FinishReason::kStop, ""), "eos");
    EXPECT_EQ(native_stop_type(engine::FinishReason::kStop, "END"), "word");
    EXPECT_EQ(native_stop_type(engine::FinishReason::kNone, ""), "none");
    const json t = native_timings(sample_stats());
    EXPECT_EQ(t["cache_n"], 8);
    EXPECT_EQ(t["prompt_n"], 12);
    EXPECT_DOUBLE_EQ(t["prompt_ms"].get<double>(), 10.0);
    EXPECT_DOUBLE_EQ(t["prompt_per_second"].get<double>(), 1200.0);
    EXPECT_EQ(t["predicted_n"], 4);
    // decode_ms spans the 3 decode steps after the first token (which the prompt's last row gave).
    EXPECT_DOUBLE_EQ(t["predicted_per_token_ms"].get<double>(), 40.0 / 3);
    EXPECT_DOUBLE_EQ(t["predicted_per_second"].get<double>(), 75.0);
    EXPECT_DOUBLE_EQ(native_timings(engine::RequestStats{})["predicted_per_second"].get<double>(), 0.0);
    engine::RequestStats one = sample_stats();
    one.num_generated = 1;
    one.decode_ms = 0;
    EXPECT_DOUBLE_EQ(native_timings(one)["predicted_per_second"].get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(native_timings(one)["predicted_per_token_ms"].get<double>(), 0.0);
}

TEST(NativeRender, ErrorsNameNativeFields) {
    ApiError e = invalid_request("'max_tokens' is too large", "max_tokens", "invalid_value");
    const ApiError native = native_field_names(e);
    EXPECT_EQ(native.param, "n_predict");
    EXPECT_EQ(native.message, "'n_predict' is too large");
    EXPECT_EQ(native_field_names(invalid_request("x", "logprobs")).param, "n_probs");
    EXPECT_EQ(native_field_names(invalid_request("x", "prompt")).param, "prompt");
}

TEST(NativeRender, ResponseFieldsUnnest) {
    const json body = {{"content", "x"}, {"generation_settings", {{"n_predict", 8}}}, {"stop", true}};
    const json some = select_response_fields(body, {"content", "generation_settings/n_predict", "missing"});
    EXPECT_EQ(some, (json{{"content", "x"}, {"generation_settings/n_predict", 8}}));
    EXPECT_EQ(select_response_fields(body, {}), body);
}

class NativeRendering : public NativeApi {
protected:
    NativeRenderer renderer(NativeOptions o, int32_t n_ctx = 4096) {
        NativeContext c;
        c.model = "m.gguf";
        c.prompt = "the cat";
        c.n_ctx = n_ctx;
        c.id_slot = 0;
        GenerationRequest gen;
        c.generation_settings = native_generation_settings(gen, o, tok(), 8, n_ctx);
        return NativeRenderer(tok(), o, c);
    }
};

TEST_F(NativeRendering, WholeResult) {
    engine::RagResult r;
    r.text = "a\nb";
    r.token_ids = {5, 6};
    r.finish_reason = engine::FinishReason::kStop;
    r.stop_word = "END";
    r.stats = sample_stats();
    NativeOptions o;
    json body = renderer(o).result_json(r);
    EXPECT_EQ(body["content"], "a\nb");
    EXPECT_EQ(body["tokens"], json::array());
    EXPECT_EQ(body["stop"], true);
    EXPECT_EQ(body["stop_type"], "word");
    EXPECT_EQ(body["stopping_word"], "END");
    EXPECT_EQ(body["has_new_line"], true);
    EXPECT_EQ(body["truncated"], false);
    EXPECT_EQ(body["tokens_predicted"], 4);
    EXPECT_EQ(body["tokens_evaluated"], 20);
    EXPECT_EQ(body["tokens_cached"], 8);
    EXPECT_EQ(body["model"], "m.gguf");
    EXPECT_EQ(body["prompt"], "the cat");
    EXPECT_EQ(body["generation_settings"]["n_predict"], 8);
    EXPECT_TRUE(body["generation_settings"]["logit_bias"].empty());
    EXPECT_FALSE(body.contains("completion_probabilities"));
    o.return_tokens = true;
    EXPECT_EQ(renderer(o).result_json(r)["tokens"], json({5, 6}));
    // The context filled: truncated.
    r.finish_reason = engine::FinishReason::kLength;
    json full = renderer(o, 24).result_json(r);
    EXPECT_EQ(full["stop_type"], "limit");
    EXPECT_EQ(full["truncated"], true);
    o.response_fields = {"content"};
    EXPECT_EQ(renderer(o).result_json(r), (json{{"content", "a\nb"}}));
}

// Each token's text and exact bytes: a piece that is not UTF-8 alone comes back as its bytes.
TEST_F(NativeRendering, ProbabilitiesCarryBytes) {
    int32_t partial = -1;
    for (int32_t id = 0; id < tok().vocab_size() && partial < 0; ++id) {
        const std::string piece = tok().token_to_piece(id, true);
        if (!piece.empty() && !text::is_valid_utf8(piece)) partial = id;
    }
    ASSERT_GE(partial, 0) << "the synthetic vocabulary has byte tokens";
    const std::string piece = tok().token_to_piece(partial, true);
    const json probs = native_probabilities(tok(), {partial, 5}, {-0.5f, -1.0f}, {{{partial, -0.5f}, {5, -2.0f}}, {}});
    ASSERT_EQ(probs.size(), 2u);
    EXPECT_EQ(probs[0]["id"], partial);
    EXPECT_TRUE(text::is_valid_utf8(probs[0]["token"].get<std::string>()));
    ASSERT_EQ(probs[0]["bytes"].size(), piece.size());
    for (size_t i = 0; i < piece.size(); ++i) EXPECT_EQ(probs[0]["bytes"][i], int(uint8_t(piece[i])));
    EXPECT_FLOAT_EQ(probs[0]["logprob"].get<float>(), -0.5f);
    ASSERT_EQ(probs[0]["top_logprobs"].size(), 2u);
    EXPECT_EQ(probs[0]["top_logprobs"][1]["id"], 5);
    EXPECT_TRUE(probs[0]["top_logprobs"][1].contains("bytes"));
    EXPECT_TRUE(probs[1]["top_logprobs"].empty());
    // post_sampling_probs: the same entries as probabilities, named as llama-server names them.
    const json post =
        native_probabilities(tok(), {5}, {std::log(0.25f)}, {{{5, std::log(0.25f)}, {7, std::log(0.75f)}}}, 0, true);
    ASSERT_EQ(post.size(), 1u);
    EXPECT_FALSE(post[0].contains("logprob"));
    EXPECT_NEAR(post[0]["prob"].get<double>(), 0.25, 1e-6);
    ASSERT_EQ(post[0]["top_probs"].size(), 2u);
    EXPECT_NEAR(post[0]["top_probs"][1]["prob"].get<double>(), 0.75, 1e-6);
}

TEST_F(NativeRendering, StreamHoldsTokensUntilTheirText) {
    NativeOptions o;
    o.n_probs = 1;
    NativeRenderer r = renderer(o);
    std::string out;
    engine::RequestEvent held;
    held.token_id = 5;
    held.logprob = -0.1f;
    held.top_logprobs = {{5, -0.1f}};
    r.stream_token(0, held, out);
    EXPECT_TRUE(out.empty());  // nothing to show yet
    engine::RequestEvent shown = held;
    shown.token_id = 6;
    shown.text = "ab";
    r.stream_token(0, shown, out);
    auto payloads = std::vector<std::string>{};
    ASSERT_EQ(out.rfind("data: ", 0), 0u) << out;
    const json chunk = json::parse(out.substr(6));
    EXPECT_EQ(chunk["content"], "ab");
    EXPECT_EQ(chunk["tokens"], json({5, 6}));
    EXPECT_EQ(chunk["stop"], false);
    EXPECT_EQ(chunk["completion_probabilities"].size(), 2u);
    out.clear();
    engine::RequestEvent end;
    end.kind = engine::RequestEvent::Kind::kFinished;
    end.finish_reason = engine::FinishReason::kLength;
    r.stream_end(0, end, sample_stats(), out);
    r.stream_close(sample_stats(), out);
    const json last = json::parse(out.substr(6));
    EXPECT_EQ(last["stop"], true);
    EXPECT_EQ(last["content"], "");
    EXPECT_EQ(last["stop_type"], "limit");
    EXPECT_EQ(last["timings"]["predicted_n"], 4);
    EXPECT_TRUE(last.contains("generation_settings"));
    EXPECT_EQ(out.find("[DONE]"), std::string::npos);
}

TEST_F(NativeRendering, IgnoreEosListsEndOfGenerationBiases) {
    GenerationRequest gen;
    gen.ignore_eos = true;
    const json s = native_generation_settings(gen, NativeOptions{}, tok(), -1, 4096);
    ASSERT_FALSE(s["logit_bias"].empty());
    for (const auto& entry : s["logit_bias"]) EXPECT_TRUE(entry["bias"].is_null());
    EXPECT_EQ(s["seed"], 4294967295ull);
    EXPECT_EQ(s["n_predict"], -1);
}

}  // namespace
}  // namespace lazyattn::server
