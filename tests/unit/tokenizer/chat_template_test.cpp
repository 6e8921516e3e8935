#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

namespace lazyattn::tokenizer {
namespace {

// SmolLM2-135M-Instruct's tokenizer.chat_template, verbatim.
const std::string kSmolLMJinja =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ "
    "'<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\n' }}{% endif %}";

// Meta-Llama-3-8B-Instruct's template.
const std::string kLlama3Jinja =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | "
    "trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% "
    "endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

// A plain ChatML template without a default system message (escaped newlines, as in JSON-born
// templates).
const std::string kChatMLJinja =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|im_start|>assistant\\n' "
    "}}{% endif %}";

TEST(ChatTemplate, DetectsKinds) {
    EXPECT_EQ(*detect_chat_template(kSmolLMJinja), ChatTemplateKind::kChatML);
    EXPECT_EQ(*detect_chat_template(kLlama3Jinja), ChatTemplateKind::kLlama3);
    auto unknown = detect_chat_template("{{ messages[0]['content'] }}[INST]");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(unknown.status().message().find("<|im_start|>"), std::string::npos);
}

TEST(ChatTemplate, Names) {
    EXPECT_EQ(*chat_template_from_name("chatml"), ChatTemplateKind::kChatML);
    EXPECT_EQ(*chat_template_from_name("llama3"), ChatTemplateKind::kLlama3);
    EXPECT_EQ(chat_template_from_name("vicuna").status().code(), StatusCode::kInvalidArgument);
    EXPECT_STREQ(chat_template_name(ChatTemplateKind::kChatML), "chatml");
    EXPECT_STREQ(chat_template_name(ChatTemplateKind::kLlama3), "llama3");
}

TEST(ChatTemplate, SmolLMInsertsDefaultSystem) {
    auto t = chat_template_from_jinja(kSmolLMJinja);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->default_system, "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
    EXPECT_EQ(*t->apply({{"user", "What is 2+2?"}}, true),
              "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
              "Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n");
    EXPECT_EQ(*t->apply({{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}}, false),
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
              "<|im_start|>assistant\nHello!<|im_end|>\n");
    EXPECT_EQ(*t->apply({}, true), "<|im_start|>assistant\n");
}

TEST(ChatTemplate, PlainChatMLHasNoDefaultSystem) {
    auto t = chat_template_from_jinja(kChatMLJinja);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->default_system, "");
    EXPECT_EQ(*t->apply({{"user", "Hi"}}, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, Llama3) {
    auto t = chat_template_from_jinja(kLlama3Jinja);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(*t->apply({{"system", "You are terse."}, {"user", "  Hi there \n"}}, true),
              "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse."
              "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(*t->apply({{"user", "x"}}, false),
              "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");
    // Jinja's trim is Python's str.strip: Unicode whitespace goes, other characters stay.
    EXPECT_EQ(*t->apply({{"user", "\u3000\u00a0x\u200b\n"}}, false),
              "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nx\u200b<|eot_id|>");
    EXPECT_EQ(*t->apply({}, true), "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

// Pieces: only the template's markers are special, contents carry their message's index (even
// when they spell a marker), and the pieces concatenate to apply()'s text.
TEST(ChatTemplate, RenderMarksSpecialsAndContents) {
    for (ChatTemplateKind kind : {ChatTemplateKind::kChatML, ChatTemplateKind::kLlama3}) {
        const ChatTemplate t{kind, kind == ChatTemplateKind::kChatML ? "Be kind." : "", nullptr, ""};
        const std::vector<ChatMessage> messages = {{"user", "a<|im_end|><|eot_id|>"}, {"assistant", "b"}};
        const auto pieces = *t.render(messages, true);
        std::string joined;
        for (const ChatPiece& p : pieces) {
            joined += p.text;
            if (p.special) {
                EXPECT_EQ(p.message, -1);
                EXPECT_TRUE(p.text.starts_with("<|") && p.text.ends_with("|>")) << p.text;
                EXPECT_EQ(p.text.find("<|", 1), std::string::npos) << "one special token per piece: " << p.text;
            }
        }
        EXPECT_EQ(joined, *t.apply(messages, true));
        std::vector<std::string> contents;
        for (const ChatPiece& p : pieces) {
            if (p.message >= 0) contents.push_back(std::to_string(p.message) + ":" + p.text);
        }
        EXPECT_EQ(contents, (std::vector<std::string>{"0:a<|im_end|><|eot_id|>", "1:b"}));
    }
}

}  // namespace
}  // namespace lazyattn::tokenizer
