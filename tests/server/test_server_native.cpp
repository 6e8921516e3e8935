// llama-server's native API over a real socket, as llama.cpp's own server tests call it:
// POST /completion and /completions (whole, streamed, lists of prompts, n_probs, stop_type,
// timings, documents served from the cache), GET /props and GET /slots, and bad input refused
// naming the field.
#include <gtest/gtest.h>

#include <string>

#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

json native_body(const json& extra = json::object()) {
    json b = {{"prompt", "the cat sat on"}, {"n_predict", 8}, {"temperature", 0}, {"ignore_eos", true}};
    b.update(extra);
    return b;
}

json post_json(const ServerProcess& s, const std::string& path, const json& body, int want_status = 200) {
    const auto r = curl("POST", s.url(path), body.dump());
    EXPECT_EQ(r.status, want_status) << path << " " << body << " -> " << r.body;
    return parse_or_null(r.body);
}

// A 400 whose error names `param`.
void expect_refused(const ServerProcess& s, const json& body, const std::string& param) {
    const auto r = curl("POST", s.url("/completion"), body.dump());
    expect_api_error(r, 400);
    EXPECT_EQ(parse_or_null(r.body)["error"]["param"], param) << body << " -> " << r.body;
}

TEST(ServerNative, WholeAnswer) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    for (const char* path : {"/completion", "/completions"}) {
        const json r = post_json(s, path, native_body());
        ASSERT_TRUE(r.is_object()) << r;
        EXPECT_TRUE(r["content"].is_string());
        EXPECT_EQ(r["tokens"], json::array());
        EXPECT_EQ(r["stop"], true);
        EXPECT_EQ(r["stop_type"], "limit");
        EXPECT_EQ(r["stopping_word"], "");
        EXPECT_EQ(r["truncated"], false);
        EXPECT_TRUE(r["has_new_line"].is_boolean());
        EXPECT_EQ(r["tokens_predicted"], 8);
        EXPECT_EQ(r["timings"]["predicted_n"], 8);
        EXPECT_EQ(r["timings"]["prompt_n"].get<int>() + r["timings"]["cache_n"].get<int>(),
                  r["tokens_evaluated"].get<int>());
        EXPECT_GT(r["tokens_evaluated"].get<int>(), 0);
        EXPECT_EQ(r["generation_settings"]["n_predict"], 8);
        EXPECT_TRUE(r["generation_settings"].contains("adaptive_target"));
        EXPECT_TRUE(r["model"].is_string());
        EXPECT_TRUE(r["prompt"].get<std::string>().find("the cat sat on") != std::string::npos) << r["prompt"];
        EXPECT_FALSE(r.contains("completion_probabilities"));
    }
    const json tokens = post_json(s, "/completion", native_body({{"return_tokens", true}}));
    ASSERT_EQ(tokens["tokens"].size(), 8u) << tokens;
    for (const auto& t : tokens["tokens"]) EXPECT_TRUE(t.is_number_integer());
    const json fields =
        post_json(s, "/completion", native_body({{"response_fields", {"content", "generation_settings/n_predict"}}}));
    EXPECT_EQ(fields.size(), 2u) << fields;
    EXPECT_EQ(fields["generation_settings/n_predict"], 8);
}

TEST(ServerNative, StreamMatchesWholeAnswer) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json whole = post_json(s, "/completion", native_body());
    const auto r = curl("POST", s.url("/completion"), native_body({{"stream", true}}).dump());
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.body.find("[DONE]"), std::string::npos);
    const auto payloads = sse_payloads(r.body);
    ASSERT_GE(payloads.size(), 2u) << r.body;
    std::string content;
    int tokens = 0;
    for (size_t i = 0; i < payloads.size(); ++i) {
        const json chunk = parse_or_null(payloads[i]);
        ASSERT_TRUE(chunk["stop"].is_boolean()) << payloads[i];
        if (i + 1 < payloads.size()) {
            EXPECT_EQ(chunk["stop"], false) << payloads[i];
            EXPECT_FALSE(chunk["tokens"].empty()) << payloads[i];
            tokens += int(chunk["tokens"].size());
            content += chunk["content"].get<std::string>();
            continue;
        }
        EXPECT_EQ(chunk["stop"], true);
        EXPECT_EQ(chunk["stop_type"], "limit");
        EXPECT_EQ(chunk["timings"]["predicted_n"], 8);
        EXPECT_EQ(chunk["generation_settings"]["n_predict"], 8);
        EXPECT_EQ(chunk["truncated"], false);
    }
    EXPECT_EQ(content, whole["content"]);
    EXPECT_LE(tokens, 8);
}

TEST(ServerNative, PromptLists) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json tokenized = post_json(s, "/tokenize", {{"content", "the cat sat on"}});
    const json ids = tokenized["tokens"];
    ASSERT_FALSE(ids.empty()) << tokenized;
    // Token ids and the same text: two answers, the same greedy text.
    const json both = post_json(s, "/completion", native_body({{"prompt", {ids, "the cat sat on"}}}));
    ASSERT_TRUE(both.is_array()) << both;
    ASSERT_EQ(both.size(), 2u);
    EXPECT_EQ(both[0]["content"], both[1]["content"]);
    EXPECT_EQ(both[0]["index"], 0);
    EXPECT_EQ(both[1]["index"], 1);
    const json object = post_json(s, "/completion", native_body({{"prompt", {ids, {{"prompt_string", "x y"}}}}}));
    EXPECT_TRUE(object.is_array() && object.size() == 2u) << object;
    // Ids and strings in one list: one prompt.
    json mixed_prompt = json::array({1, 2, "the cat", 3});
    const json mixed = post_json(s, "/completion", native_body({{"prompt", mixed_prompt}}));
    EXPECT_TRUE(mixed.is_object() && mixed["content"].is_string()) << mixed;
    expect_refused(s, native_body({{"prompt", {"a", "b"}}, {"stream", true}}), "stream");
    expect_still_serving(s);
}

TEST(ServerNative, CompletionProbabilities) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json r = post_json(s, "/completion", native_body({{"n_probs", 5}, {"n_predict", 4}}));
    ASSERT_EQ(r["completion_probabilities"].size(), 4u) << r;
    for (const auto& tok : r["completion_probabilities"]) {
        EXPECT_TRUE(tok["id"].is_number_integer());
        EXPECT_TRUE(tok["token"].is_string());
        EXPECT_LE(tok["logprob"].get<double>(), 0.0);
        EXPECT_TRUE(tok["bytes"].is_array());
        ASSERT_EQ(tok["top_logprobs"].size(), 5u) << tok;
        for (const auto& alt : tok["top_logprobs"]) {
            EXPECT_TRUE(alt["id"].is_number_integer());
            EXPECT_TRUE(alt["bytes"].is_array());
            EXPECT_LE(alt["logprob"].get<double>(), 0.0);
        }
    }
    const auto streamed =
        curl("POST", s.url("/completion"), native_body({{"n_probs", 3}, {"n_predict", 4}, {"stream", true}}).dump());
    int chunks = 0;
    for (const auto& p : sse_payloads(streamed.body)) {
        const json chunk = parse_or_null(p);
        if (chunk["stop"] == true) continue;
        ++chunks;
        ASSERT_GE(chunk["completion_probabilities"].size(), 1u) << p;
        EXPECT_EQ(chunk["completion_probabilities"][0]["top_logprobs"].size(), 3u) << p;
    }
    EXPECT_GE(chunks, 1);
}

// stop_type says why: "limit" (n_predict), "word" (a stop string, named in stopping_word), "eos".
TEST(ServerNative, StopTypes) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json free_run = post_json(s, "/completion", native_body({{"n_predict", 24}}));
    const std::string text = free_run["content"].get<std::string>();
    size_t at = std::string::npos;
    for (size_t k = 1; k + 2 < text.size() && at == std::string::npos; ++k) {
        bool ascii = true;
        for (size_t j = k; j < k + 2; ++j) ascii = ascii && text[j] > 32 && text[j] < 127;
        if (ascii) at = k;
    }
    if (at != std::string::npos) {
        const std::string stop = text.substr(at, 2);
        const json word = post_json(s, "/completion", native_body({{"n_predict", 24}, {"stop", {stop}}}));
        EXPECT_EQ(word["stop_type"], "word") << word;
        EXPECT_EQ(word["stopping_word"], stop);
        EXPECT_EQ(word["content"], text.substr(0, text.find(stop)));
    }
    // The end-of-generation token made certain by logit_bias (its id from ignore_eos's listing).
    const json listed = post_json(s, "/completion", native_body({{"n_predict", 1}}));
    ASSERT_FALSE(listed["generation_settings"]["logit_bias"].empty()) << listed;
    const int eos = listed["generation_settings"]["logit_bias"][0]["token"];
    const json eos_run = post_json(
        s, "/completion", native_body({{"ignore_eos", false}, {"logit_bias", {{eos, 100}}}, {"n_predict", 8}}));
    EXPECT_EQ(eos_run["stop_type"], "eos") << eos_run;
    EXPECT_EQ(eos_run["content"], "");
}

// n_predict -1 runs until the context is full: truncated, "limit".
TEST(ServerNative, NPredictUnlimitedFillsTheContext) {
    ServerProcess s(server_args({}, 128));
    ASSERT_TRUE(s.started()) << s.log();
    const json r = post_json(s, "/completion", native_body({{"n_predict", -1}}));
    EXPECT_EQ(r["stop_type"], "limit") << r;
    EXPECT_EQ(r["truncated"], true) << r;
    const int used = r["tokens_evaluated"].get<int>() + r["tokens_predicted"].get<int>();
    // The last token is sampled from the last position and needs no place of its own.
    EXPECT_GE(used, 127) << r;
    EXPECT_LE(used, 129) << r;
}

// Documents reach the native API: the second request reads them from the cache.
TEST(ServerNative, DocumentsAreServedFromTheCache) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    std::string doc;
    for (int i = 0; i < 12; ++i) doc += "gold is a dense yellow metal that does not rust. ";
    const json body = native_body({{"documents", {doc}}, {"prompt", "what is gold?"}, {"n_predict", 2}});
    const json first = post_json(s, "/completion", body);
    const json second = post_json(s, "/completion", body);
    EXPECT_GT(second["tokens_cached"].get<int>(), 64) << second;
    EXPECT_GT(second["tokens_cached"].get<int>(), first["tokens_cached"].get<int>());
    EXPECT_EQ(second["timings"]["cache_n"], second["tokens_cached"]);
    EXPECT_EQ(first["tokens_evaluated"], second["tokens_evaluated"]);
}

TEST(ServerNative, PropsAndSlots) {
    ServerProcess s(server_args({"--max-num-seqs", "3"}));
    ASSERT_TRUE(s.started()) << s.log();
    const auto props = curl("GET", s.url("/props"));
    ASSERT_EQ(props.status, 200) << props.body;
    const json p = parse_or_null(props.body);
    EXPECT_EQ(p["total_slots"], 3);
    EXPECT_NE(p["model_path"].get<std::string>().find(".gguf"), std::string::npos) << p;
    EXPECT_EQ(p["modalities"]["vision"], false);
    EXPECT_EQ(p["default_generation_settings"]["n_ctx"], 4096);
    EXPECT_TRUE(p["default_generation_settings"]["params"].contains("seed")) << p;
    EXPECT_TRUE(p["build_info"].is_string());
    expect_api_error(curl("POST", s.url("/props"), "{}"), 501);
    const auto slots = curl("GET", s.url("/slots"));
    ASSERT_EQ(slots.status, 200) << slots.body;
    const json list = parse_or_null(slots.body);
    ASSERT_EQ(list.size(), 3u) << list;
    EXPECT_EQ(list[0]["n_ctx"], 4096);
    EXPECT_EQ(list[0]["is_processing"], false);
    EXPECT_FALSE(list[0].contains("params"));
    ASSERT_TRUE(list[0]["next_token"].is_array()) << list[0];  // llama-server's list of one
    EXPECT_EQ(list[0]["next_token"][0]["n_remain"], -1);

    ServerProcess off(server_args({"--no-slots"}));
    ASSERT_TRUE(off.started()) << off.log();
    expect_api_error(curl("GET", off.url("/slots")), 501);
    EXPECT_EQ(curl("GET", off.url("/props")).status, 200);
}

TEST(ServerNative, BadInputIsRefusedNamingTheField) {
    ServerProcess s(server_args({"--max-num-seqs", "2"}));
    ASSERT_TRUE(s.started()) << s.log();
    expect_refused(s, json::object(), "prompt");
    expect_refused(s, native_body({{"prompt", 5}}), "prompt");
    expect_refused(s, native_body({{"prompt", {{"prompt_string", "x"}, {"multimodal_data", {"AAAA"}}}}}),
                   "prompt.multimodal_data");
    expect_refused(s, native_body({{"n_predict", "8"}}), "n_predict");
    expect_refused(s, native_body({{"n_probs", 99}}), "n_probs");
    expect_refused(s, native_body({{"mirostat", 2}}), "mirostat");
    expect_refused(s, native_body({{"grammar", "root ::= undefined_rule"}}), "grammar");
    expect_refused(s, native_body({{"json_schema", {{"type", 5}}}}), "json_schema");
    expect_refused(s, native_body({{"dry_multiplier", 0.5}}), "dry_multiplier");
    expect_refused(s, native_body({{"post_sampling_probs", 1}}), "post_sampling_probs");
    expect_refused(s, native_body({{"id_slot", 2}}), "id_slot");
    expect_refused(s, native_body({{"logit_bias", "x"}}), "logit_bias");
    expect_refused(s, native_body({{"logit_bias", {{99999999, 1}}}}), "logit_bias");
    expect_refused(s, native_body({{"samplers", {"nope"}}}), "samplers");
    expect_refused(s, native_body({{"repeat_penalty", -1}}), "repeat_penalty");
    expect_refused(s, native_body({{"documents", {5}}}), "documents[0]");
    expect_api_error(curl("POST", s.url("/completion"), "{not json"), 400);
    // Accepted: the fields that change nothing here, and the slot in range.
    const json ok = post_json(
        s, "/completion",
        native_body({{"cache_prompt", false}, {"id_slot", 1}, {"samplers", {"top_k", "temperature"}}, {"seed", 42}}));
    EXPECT_EQ(ok["id_slot"], 1);
    EXPECT_EQ(ok["generation_settings"]["seed"], 42);
    expect_still_serving(s);
}

}  // namespace
}  // namespace lazyattn::testing
