// A chat request's template fields as llama-server and vLLM take them: add_generation_prompt,
// continue_final_message and the assistant prefill, chat_template_kwargs, reasoning_format; parsed
// with 400s naming the field, and laid out by RequestBuilder with documents (the question still
// starts the tail; a continued assistant message follows the assistant header there).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/openai_request.h"
#include "server/request_builder.h"
#include "server_units_fixture.h"
#include "tokenizer/chat_template_kwargs.h"
#include "tokenizer/jinja_chat_template.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;

json chat_body(json extra = json::object()) {
    json body = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}};
    for (auto& [k, v] : extra.items()) body[k] = v;
    return body;
}

TEST(ChatTemplateFields, ParsedFromAChatRequest) {
    GenerationRequest r;
    ASSERT_FALSE(parse_generation_request(chat_body({{"add_generation_prompt", false},
                                                     {"continue_final_message", true},
                                                     {"chat_template_kwargs", {{"enable_thinking", false}}},
                                                     {"reasoning_format", "deepseek-legacy"}}),
                                          true, r));
    EXPECT_EQ(r.add_generation_prompt, false);
    EXPECT_EQ(r.continue_final_message, true);
    ASSERT_TRUE(r.chat_template_kwargs.is_dict());
    EXPECT_EQ(r.chat_template_kwargs.dict_items().size(), 1u);
    EXPECT_EQ(r.reasoning_format, ReasoningFormat::kDeepseekLegacy);

    GenerationRequest unset;
    ASSERT_FALSE(parse_generation_request(chat_body(), true, unset));
    EXPECT_FALSE(unset.add_generation_prompt.has_value());
    EXPECT_FALSE(unset.continue_final_message.has_value());
    EXPECT_TRUE(unset.chat_template_kwargs.is_undefined());
    EXPECT_FALSE(unset.reasoning_format.has_value());

    GenerationRequest content;
    ASSERT_FALSE(parse_generation_request(chat_body({{"continue_final_message", "content"}}), true, content));
    EXPECT_EQ(content.continue_final_message, true);

    // A completion ignores them, as llama-server does.
    GenerationRequest completion;
    ASSERT_FALSE(parse_generation_request(json{{"prompt", "x"}, {"chat_template_kwargs", 5}, {"reasoning_format", 1}},
                                          false, completion));
}

TEST(ChatTemplateFields, BadValuesAre400sNamingTheField) {
    const std::vector<std::pair<json, std::string>> cases = {
        {{{"add_generation_prompt", "yes"}}, "add_generation_prompt"},
        {{{"continue_final_message", 1}}, "continue_final_message"},
        {{{"continue_final_message", "reasoning_content"}}, "continue_final_message"},
        {{{"continue_final_message", true}, {"add_generation_prompt", true}}, "continue_final_message"},
        {{{"chat_template_kwargs", json::array()}}, "chat_template_kwargs"},
        {{{"chat_template_kwargs", {{"messages", 1}}}}, "chat_template_kwargs"},
        {{{"chat_template_kwargs", {{"add_generation_prompt", true}}}}, "chat_template_kwargs"},
        {{{"chat_template_kwargs", {{"x", std::string(tokenizer::kMaxTemplateKwargsBytes, 'a')}}}},
         "chat_template_kwargs"},
        {{{"reasoning_format", "r1"}}, "reasoning_format"},
        {{{"reasoning_format", true}}, "reasoning_format"},
    };
    for (const auto& [extra, field] : cases) {
        GenerationRequest r;
        auto e = parse_generation_request(chat_body(extra), true, r);
        ASSERT_TRUE(e.has_value()) << extra.dump();
        EXPECT_EQ(e->http_status, 400) << extra.dump();
        EXPECT_EQ(e->param, field) << extra.dump();
    }
}

class ChatTemplateLayout : public ServerUnitsModel {
protected:
    RequestBuilder builder() const { return RequestBuilder(*model_->tokenizer, chat_, 512, 4096, {}); }
    std::string decode(const std::vector<int32_t>& ids) const { return model_->tokenizer->decode(ids, true); }
};

TEST_F(ChatTemplateLayout, AFinalAssistantMessageIsContinuedInTheTailAfterTheQuestion) {
    GenerationRequest g;
    g.chat = true;
    g.messages = {{"system", "Book"}, {"user", "What is the best book"}, {"assistant", "Whill"}};
    g.documents = {{"a passage", "", {}, ""}};
    auto got = builder().build(g, "");
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    // The conversation up to the question, opened for the assistant, then the prefill as it is.
    const std::string opened = *chat_.apply({g.messages[0], g.messages[1]}, true);
    const std::string tail = decode(got->tail);
    EXPECT_EQ(tail, opened.substr(opened.find("What is the best book")) + "Whill");
    ASSERT_EQ(got->segments.size(), 2u);
    EXPECT_EQ(decode(got->segments[0]), opened.substr(0, opened.find("What is the best book")));

    // vLLM's spelling says the same.
    g.continue_final_message = true;
    g.add_generation_prompt = false;
    auto vllm = builder().build(g, "");
    ASSERT_TRUE(vllm.ok());
    EXPECT_EQ(vllm->tail, got->tail);
    EXPECT_EQ(vllm->segments, got->segments);

    // continue_final_message false: the assistant turn is closed and a new one opened.
    g.continue_final_message = false;
    g.add_generation_prompt.reset();
    auto closed = builder().build(g, "");
    ASSERT_TRUE(closed.ok());
    const std::string whole = *chat_.apply(g.messages, true);
    EXPECT_EQ(decode(closed->tail), whole.substr(whole.find("Whill")));
}

// llama-server's join of text parts: a newline in every message, a blank line inside the
// prefill the answer continues (its test_chat_template_assistant_prefill: "Wh" + "ill").
TEST_F(ChatTemplateLayout, TextPartsJoinWithANewlineAndAPrefillsWithABlankLine) {
    const json parts = json::array({{{"type", "text"}, {"text", "Wh"}}, {{"type", "text"}, {"text", "ill"}}});
    const json what = json::array({{{"type", "text"}, {"text", "What is"}}, {{"type", "text"}, {"text", "the best"}}});
    GenerationRequest g;
    ASSERT_FALSE(parse_generation_request({{"messages",
                                            {{{"role", "system"}, {"content", parts}},
                                             {{"role", "user"}, {"content", what}},
                                             {{"role", "assistant"}, {"content", parts}}}}},
                                          true, g));
    // As read, every message's parts joined with a newline (the system's, the user's).
    EXPECT_EQ(g.messages[0].content, "Wh\nill");
    EXPECT_EQ(g.messages[1].content, "What is\nthe best");
    auto got = builder().build(g, "");
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    const std::string prompt = decode(got->tail);
    const std::string opened = *chat_.apply({g.messages[0], g.messages[1]}, true);
    EXPECT_EQ(prompt, opened.substr(opened.find("What is\nthe best")) + "Wh\n\nill");

    // Not continued (continue_final_message false), the assistant turn joins as any other.
    g.continue_final_message = false;
    auto closed = builder().build(g, "");
    ASSERT_TRUE(closed.ok());
    EXPECT_EQ(decode(closed->tail).find("Wh\n\nill"), std::string::npos);
    EXPECT_NE(decode(closed->tail).find("Wh\nill"), std::string::npos);
}

TEST_F(ChatTemplateLayout, AddGenerationPromptFalseEndsWithTheLastTurn) {
    GenerationRequest g;
    g.chat = true;
    g.messages = {{"user", "Hi"}};
    g.add_generation_prompt = false;
    auto got = builder().build(g, "");
    ASSERT_TRUE(got.ok());
    const std::string closed = *chat_.apply(g.messages, false);
    EXPECT_EQ(decode(got->tail), closed.substr(closed.find("Hi")));
    EXPECT_NE(*chat_.apply(g.messages, true), closed);
}

TEST_F(ChatTemplateLayout, RefusesWhatCannotBeContinued) {
    GenerationRequest g;
    g.chat = true;
    g.messages = {{"user", "Hi"}, {"assistant", "A"}, {"assistant", "B"}};
    auto two = builder().build(g, "");
    ASSERT_FALSE(two.ok());
    EXPECT_EQ(two.status().code(), StatusCode::kInvalidArgument);
    g.messages = {{"user", "Hi"}};
    g.continue_final_message = true;
    auto user = builder().build(g, "");
    ASSERT_FALSE(user.ok());
    EXPECT_NE(user.status().message().find("continue_final_message"), std::string::npos);
}

TEST_F(ChatTemplateLayout, KwargsReachTheModelsTemplate) {
    // A template that shows a variable: the request's kwargs render into the prompt.
    auto compiled = tokenizer::JinjaChatTemplate::compile(
        "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
        "{% if add_generation_prompt %}{{ 'assistant (' ~ (mood | default('plain')) ~ '):' }}{% endif %}",
        tokenizer::chat_template_tokens_from_gguf(model_->model->gguf()));
    ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
    tokenizer::ChatTemplate t;
    t.kind = tokenizer::ChatTemplateKind::kJinja;
    t.jinja = *compiled;
    t.default_kwargs = *tokenizer::chat_template_kwargs_from_text(R"({"mood": "calm"})", "k");
    RequestBuilder b(*model_->tokenizer, t, 512, 4096, {});
    GenerationRequest g;
    g.chat = true;
    g.messages = {{"user", "Hi"}};
    auto with_default = b.build(g, "");
    ASSERT_TRUE(with_default.ok());
    EXPECT_NE(decode(with_default->tail).find("assistant (calm):"), std::string::npos) << decode(with_default->tail);
    g.chat_template_kwargs = *tokenizer::chat_template_kwargs_from_text(R"({"mood": "bold"})", "k");
    auto overridden = b.build(g, "");
    ASSERT_TRUE(overridden.ok());
    EXPECT_NE(decode(overridden->tail).find("assistant (bold):"), std::string::npos) << decode(overridden->tail);
}

}  // namespace
}  // namespace lazyattn::server
