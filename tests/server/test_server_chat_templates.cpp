// Chat templates and thinking models over a real socket: --chat-template as a built-in name and as
// a template's text, --chat-template-kwargs, and the reply's <think> section split into
// reasoning_content (whole and streamed) by --reasoning-format and a request's reasoning_format.
#include <gtest/gtest.h>

#include <string>

#include "server/reasoning_split.h"
#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using nlohmann::json;

// A template whose generation prompt opens the thoughts (as DeepSeek-R1's does), so whatever the
// random model writes is its thinking until it writes </think>.
const std::string kThinkingTemplate =
    "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: <think>\n{% endif %}";

json chat(const ServerProcess& s, const json& extra = json::object()) {
    const auto r = curl("POST", s.url("/v1/chat/completions"), completion_body(true, extra, 12));
    EXPECT_EQ(r.status, 200) << r.body;
    return parse_or_null(r.body)["choices"][0]["message"];
}

TEST(ServerChatTemplates, ThoughtsGoToReasoningContentWholeAndStreamed) {
    ServerProcess s(server_args({"--chat-template", kThinkingTemplate}));
    ASSERT_TRUE(s.started()) << s.log();
    const json raw = chat(s, {{"reasoning_format", "none"}});
    ASSERT_TRUE(raw["content"].is_string()) << raw;
    EXPECT_FALSE(raw.contains("reasoning_content")) << raw;
    const std::string text = raw["content"];
    const server::ReasoningParts want = server::split_reasoning(text, server::ReasoningFormat::kDeepseek, true);

    const json split = chat(s);  // the server's default: auto
    EXPECT_EQ(split["reasoning_content"], want.reasoning) << split;
    EXPECT_EQ(split["content"], want.content) << split;
    const json legacy = chat(s, {{"reasoning_format", "deepseek-legacy"}});
    EXPECT_EQ(legacy["reasoning_content"], want.reasoning) << legacy;
    EXPECT_EQ(legacy["content"], text) << legacy;

    const auto streamed = curl("POST", s.url("/v1/chat/completions"), completion_body(true, {{"stream", true}}, 12));
    ASSERT_EQ(streamed.status, 200) << streamed.body;
    std::string reasoning, content;
    for (const std::string& p : sse_payloads(streamed.body)) {
        if (p == "[DONE]") break;
        const json delta = parse_or_null(p)["choices"][0]["delta"];
        if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"].get<std::string>();
        if (delta.contains("content") && delta["content"].is_string()) content += delta["content"].get<std::string>();
    }
    EXPECT_EQ(reasoning, want.reasoning) << streamed.body;
    EXPECT_EQ(content, want.content) << streamed.body;
}

TEST(ServerChatTemplates, ReasoningFormatNoneOnTheCommandLineLeavesTheText) {
    ServerProcess s(server_args({"--chat-template", kThinkingTemplate, "--reasoning-format", "none"}));
    ASSERT_TRUE(s.started()) << s.log();
    const json m = chat(s);
    EXPECT_FALSE(m.contains("reasoning_content")) << m;
    EXPECT_TRUE(m.contains("reasoning_content") == false && m["content"].is_string());
    EXPECT_EQ(chat(s, {{"reasoning_format", "deepseek"}}).count("reasoning_content"), 1u);
}

TEST(ServerChatTemplates, BuiltInNamesKwargsAndTheirRefusals) {
    // A template that writes a variable into the prompt: the server's default, a request's override.
    const std::string shows_mood =
        "{% for m in messages %}{{ m.role }} ({{ mood }}): {{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant:{% endif %}";
    ServerProcess s(server_args({"--chat-template", shows_mood, "--chat-template-kwargs", R"({"mood": "calm"})"}));
    ASSERT_TRUE(s.started()) << s.log();
    auto prompt_tokens = [&](const json& extra) {
        const auto r = curl("POST", s.url("/v1/chat/completions"), completion_body(true, extra, 1));
        EXPECT_EQ(r.status, 200) << r.body;
        return parse_or_null(r.body)["usage"]["prompt_tokens"].get<int>();
    };
    // "calm" and "exuberant" differ in length, so the prompt's token count shows which rendered.
    EXPECT_LT(prompt_tokens(json::object()), prompt_tokens({{"chat_template_kwargs", {{"mood", "exuberant"}}}}));
    expect_api_error(curl("POST", s.url("/v1/chat/completions"),
                          completion_body(true, {{"chat_template_kwargs", {{"messages", 1}}}})),
                     400);
    expect_api_error(curl("POST", s.url("/v1/chat/completions"),
                          completion_body(true, {{"add_generation_prompt", true}, {"continue_final_message", true}})),
                     400);
    expect_api_error(curl("POST", s.url("/v1/chat/completions"), completion_body(true, {{"reasoning_format", "r1"}})),
                     400);

    // llama-server's built-in names start. Any other word that is not a file is the template's
    // text, as llama-server reads it, with a warning naming the built-in names; a value that
    // looks like a path and is no file is refused.
    ServerProcess named(server_args({"--chat-template", "command-r"}));
    ASSERT_TRUE(named.started()) << named.log();
    EXPECT_EQ(curl("POST", named.url("/v1/chat/completions"), completion_body(true)).status, 200);
    ServerProcess text(server_args({"--chat-template", "This is not a chat template, it is"}));
    ASSERT_TRUE(text.started()) << text.log();
    EXPECT_NE(text.log().find("taken as the template's text"), std::string::npos) << text.log();
    EXPECT_NE(text.log().find("mistral-v7"), std::string::npos) << text.log();
    const auto rendered =
        curl("POST", text.url("/apply-template"), json{{"messages", {{{"role", "user"}, {"content", "hi"}}}}}.dump());
    ASSERT_EQ(rendered.status, 200) << rendered.body;
    EXPECT_EQ(parse_or_null(rendered.body)["prompt"], "This is not a chat template, it is");
    // It writes no message, so there is no question to place documents around: without documents
    // its whole text is the prompt; with documents, a 400 saying why.
    const auto chat = curl("POST", text.url("/v1/chat/completions"), completion_body(true));
    ASSERT_EQ(chat.status, 200) << chat.body;
    EXPECT_GT(parse_or_null(chat.body)["usage"]["prompt_tokens"].get<int>(), 3) << chat.body;
    expect_api_error(curl("POST", text.url("/v1/chat/completions"), completion_body(true, {{"documents", {"gold"}}})),
                     400);
    for (const char* path : {"templates/missing.jinja", "no-such-template.jinja"}) {
        ServerProcess missing(server_args({"--chat-template", path}));
        EXPECT_FALSE(missing.started()) << path;
        EXPECT_EQ(missing.wait_exit(30), 2) << path;
        EXPECT_NE(missing.log().find("no such file"), std::string::npos) << missing.log();
    }
}

// A final assistant message is continued (llama-server's prefill, vLLM's continue_final_message):
// its text follows the assistant header, so the prompt holds it and no second header.
TEST(ServerChatTemplates, AFinalAssistantMessageIsContinued) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const json user = {{"role", "user"}, {"content", "what is gold?"}};
    const json prefill = {{"role", "assistant"}, {"content", "Gold is"}};
    auto prompt_tokens = [&](const json& body) {
        const auto r = curl("POST", s.url("/v1/chat/completions"), body.dump());
        EXPECT_EQ(r.status, 200) << r.body;
        return parse_or_null(r.body)["usage"]["prompt_tokens"].get<int>();
    };
    const json base = {{"max_tokens", 1}, {"temperature", 0}};
    json plain = base, continued = base, vllm = base, closed = base;
    plain["messages"] = {user};
    continued["messages"] = vllm["messages"] = closed["messages"] = {user, prefill};
    vllm["continue_final_message"] = true;
    vllm["add_generation_prompt"] = false;
    closed["continue_final_message"] = false;
    const int n_plain = prompt_tokens(plain), n_continued = prompt_tokens(continued);
    EXPECT_GT(n_continued, n_plain);
    EXPECT_EQ(prompt_tokens(vllm), n_continued);
    EXPECT_GT(prompt_tokens(closed), n_continued);  // its turn closed and a new header opened
    json only_assistant = base;
    only_assistant["messages"] = {prefill};
    expect_api_error(curl("POST", s.url("/v1/chat/completions"), only_assistant.dump()), 400);
}

}  // namespace
}  // namespace lazyattn::testing
