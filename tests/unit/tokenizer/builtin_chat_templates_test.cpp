// llama-server's built-in chat template names: every name of the pinned llama.cpp is served, each
// renders a fixed conversation, a few render to texts written out from the formats' descriptions,
// and where llama.cpp's collection holds a real template of the family, ours renders what it
// renders (from the first turn a difference by design leaves alone).
#include "tokenizer/builtin_chat_templates.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>
#include <set>

#include "loader/gguf_file.h"
#include "loader/gguf_writer.h"
#include "template/template.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/chat_template_kwargs.h"
#include "tokenizer/jinja_chat_template.h"
#include "unit/tokenizer/llama_cpp_sources.h"

namespace lazyattn::tokenizer {
namespace {

namespace fs = std::filesystem;
using testing_support::kNoLlamaCppSources;
using testing_support::llama_cpp_sources;
using testing_support::read_text_file;

const std::vector<ChatMessage> kWithSystem = {
    {"system", "You are terse."}, {"user", "Name a colour."}, {"assistant", "Blue."}, {"user", "Another one?"}};
const std::vector<ChatMessage> kWithoutSystem = {
    {"user", "Name a colour."}, {"assistant", "Blue."}, {"user", "Another one?"}};

std::string join(const std::vector<ChatPiece>& pieces) {
    std::string s;
    for (const ChatPiece& p : pieces) s += p.text;
    return s;
}

Expected<std::string> render(const std::string& source, const std::vector<ChatMessage>& messages,
                             bool generation_prompt = true, const std::string& bos = "", const std::string& eos = "") {
    ChatTemplateTokens tokens;
    tokens.bos_token = bos;
    tokens.eos_token = eos;
    LA_ASSIGN_OR_RETURN(auto t, JinjaChatTemplate::compile(source, tokens));
    LA_ASSIGN_OR_RETURN(auto pieces, t->render(messages, generation_prompt));
    return join(pieces);
}

// A template on its own, as jinja2 renders it with only the variables transformers passes (no
// llama-server extras such as enable_thinking, which a thinking family's template reads).
Expected<std::string> render_alone(const std::string& source, const std::vector<ChatMessage>& messages,
                                   bool generation_prompt, const std::string& eos) {
    LA_ASSIGN_OR_RETURN(tmpl::Template t, tmpl::Template::parse(source));
    tmpl::ValueList list;
    for (const ChatMessage& m : messages) {
        tmpl::Value d = tmpl::Value::dict();
        d.dict_items().set("role", m.role);
        d.dict_items().set("content", m.content);
        list.push_back(d);
    }
    tmpl::Value ctx = tmpl::Value::dict();
    ctx.dict_items().set("messages", tmpl::Value::list(list));
    ctx.dict_items().set("add_generation_prompt", generation_prompt);
    ctx.dict_items().set("bos_token", "");
    ctx.dict_items().set("eos_token", eos);
    return t.render(ctx);
}

std::string builtin(const std::string& name, const std::vector<ChatMessage>& messages, bool generation_prompt = true,
                    const std::string& eos = "") {
    const BuiltinChatTemplate* t = find_builtin_chat_template(name);
    EXPECT_NE(t, nullptr) << name;
    if (t == nullptr) return "";
    auto text = render(t->source, messages, generation_prompt, "", eos);
    EXPECT_TRUE(text.ok()) << name << ": " << text.status().to_string();
    return text.ok() ? *text : "";
}

TEST(BuiltinChatTemplates, EveryNameRendersAndPlacesEachContent) {
    ASSERT_GE(builtin_chat_templates().size(), 50u);
    for (const BuiltinChatTemplate& t : builtin_chat_templates()) {
        for (bool generation_prompt : {true, false}) {
            ChatTemplateTokens tokens;
            auto compiled = JinjaChatTemplate::compile(t.source, tokens);
            ASSERT_TRUE(compiled.ok()) << t.name << ": " << compiled.status().to_string();
            auto pieces = (*compiled)->render(kWithSystem, generation_prompt);
            ASSERT_TRUE(pieces.ok()) << t.name << ": " << pieces.status().to_string();
            // The last user message is located (the RAG layout puts it in the tail).
            bool found_last = false;
            for (const ChatPiece& p : *pieces) found_last |= p.message == 3;
            EXPECT_TRUE(found_last) << t.name << " does not write the last message's content: " << join(*pieces);
        }
    }
    EXPECT_EQ(find_builtin_chat_template("no-such-format"), nullptr);
    EXPECT_NE(builtin_chat_template_names().find("command-r, deepseek"), std::string::npos);
}

TEST(BuiltinChatTemplates, RenderTheFormatsAsDescribed) {
    // llama-server's own test of --chat-template command-r (/apply-template).
    EXPECT_EQ(builtin("command-r", {{"system", "You are a test."}, {"user", "Hi there"}}),
              "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>You are a test.<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|>"
              "<|USER_TOKEN|>Hi there<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");
    EXPECT_EQ(builtin("llama3", {{"system", "Book"}, {"user", " What is the best book "}}),
              "<|start_header_id|>system<|end_header_id|>\n\nBook<|eot_id|><|start_header_id|>user<|end_header_id|>"
              "\n\nWhat is the best book<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
    EXPECT_EQ(builtin("chatml", kWithoutSystem, false),
              "<|im_start|>user\nName a colour.<|im_end|>\n<|im_start|>assistant\nBlue.<|im_end|>\n"
              "<|im_start|>user\nAnother one?<|im_end|>\n");
    // Gemma has no system role: the system text opens the next user turn; the assistant is "model".
    EXPECT_EQ(builtin("gemma", kWithSystem),
              "<start_of_turn>user\nYou are terse.\n\nName a colour.<end_of_turn>\n<start_of_turn>model\nBlue."
              "<end_of_turn>\n<start_of_turn>user\nAnother one?<end_of_turn>\n<start_of_turn>model\n");
    EXPECT_EQ(builtin("mistral-v7", kWithSystem),
              "[SYSTEM_PROMPT] You are terse.[/SYSTEM_PROMPT][INST] Name a colour.[/INST] Blue.</s>[INST] Another "
              "one?[/INST]");
    EXPECT_EQ(builtin("mistral-v3-tekken", kWithSystem),
              "[INST]You are terse.\n\nName a colour.[/INST]Blue.</s>[INST]Another one?[/INST]");
    EXPECT_EQ(builtin("llama2-sys", kWithSystem),
              "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nName a colour. [/INST]Blue.</s>[INST] Another one? [/INST]");
    EXPECT_EQ(builtin("llama2-sys-bos", kWithSystem),
              "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nName a colour. [/INST]Blue.</s><s>[INST] Another one? "
              "[/INST]");
    EXPECT_EQ(builtin("phi3", kWithoutSystem),
              "<|user|>\nName a colour.<|end|>\n<|assistant|>\nBlue.<|end|>\n<|user|>\nAnother one?<|end|>\n"
              "<|assistant|>\n");
    EXPECT_EQ(builtin("openchat", kWithSystem),
              "You are terse.<|end_of_turn|>GPT4 Correct User: Name a colour.<|end_of_turn|>GPT4 Correct Assistant: "
              "Blue.<|end_of_turn|>GPT4 Correct User: Another one?<|end_of_turn|>GPT4 Correct Assistant:");
    EXPECT_EQ(builtin("deepseek3", kWithSystem),
              "You are terse.\n\n<｜User｜>Name a colour.<｜Assistant｜>Blue.<｜end▁of▁sentence｜><｜User｜>Another "
              "one?<｜Assistant｜>");
    EXPECT_EQ(builtin("bailing2", kWithoutSystem, false),
              "<role>SYSTEM</role>detailed thinking off<|role_end|><role>HUMAN</role>Name a colour.<|role_end|>"
              "<role>ASSISTANT</role>Blue.<|role_end|><role>HUMAN</role>Another one?<|role_end|>");
    EXPECT_EQ(builtin("gigachat", kWithSystem, false),
              "<s>You are terse.<|message_sep|>user<|role_sep|>Name a colour.<|message_sep|>available functions"
              "<|role_sep|>[]<|message_sep|>assistant<|role_sep|>Blue.<|message_sep|>user<|role_sep|>Another one?"
              "<|message_sep|>available functions<|role_sep|>[]<|message_sep|>");
    EXPECT_EQ(builtin("rwkv-world", kWithoutSystem),
              "User: Name a colour.\n\nAssistant: Blue.\n\nUser: Another one?\n\nAssistant:");
}

// The names llama-server builds in: the keys of LLM_CHAT_TEMPLATES in the pinned src/llama-chat.cpp.
std::set<std::string> pinned_builtin_names(const fs::path& tree) {
    const std::string source = read_text_file(tree / "src" / "llama-chat.cpp");
    const size_t begin = source.find("LLM_CHAT_TEMPLATES = {");
    const size_t end = source.find("};", begin);
    std::set<std::string> names;
    if (begin == std::string::npos || end == std::string::npos) return names;
    const std::string table = source.substr(begin, end - begin);
    const std::regex entry(R"(\{\s*"([^"]+)\"\s*,\s*LLM_CHAT_TEMPLATE_)");
    for (std::sregex_iterator it(table.begin(), table.end(), entry), stop; it != stop; ++it) names.insert((*it)[1]);
    return names;
}

TEST(BuiltinChatTemplates, ServeEveryNameOfThePinnedLlamaServer) {
    const fs::path tree = llama_cpp_sources();
    if (tree.empty()) GTEST_SKIP() << kNoLlamaCppSources;
    const std::set<std::string> pinned = pinned_builtin_names(tree);
    ASSERT_GE(pinned.size(), 40u) << "could not read LLM_CHAT_TEMPLATES from " << tree / "src" / "llama-chat.cpp";
    for (const std::string& name : pinned) {
        EXPECT_NE(find_builtin_chat_template(name), nullptr)
            << "llama-server builds in '" << name << "'; src/tokenizer/builtin_chat_templates.cpp has no text for it";
    }
    for (const BuiltinChatTemplate& t : builtin_chat_templates()) {
        EXPECT_TRUE(pinned.count(t.name)) << "'" << t.name << "' is not a built-in name of the pinned llama-server";
    }
}

// A real template of a built-in's family in llama.cpp's models/templates/, rendered with the
// family's BOS and EOS texts (a built-in writes no BOS: the tokenizer adds it). A real template
// may add text of its own before some turn (a date, a default system prompt): `from` says where
// the comparison starts in both texts (the first occurrence), always or (`from_without_system`)
// only for the conversation without a system message; "" compares the whole text.
struct FamilyTemplate {
    std::string name;
    std::string file;
    std::string eos;
    std::string from;
    std::string from_without_system;
    std::string why;  // why a `from` is needed
};

const std::vector<FamilyTemplate> kFamilies = {
    {"chatml", "Qwen-Qwen2.5-7B-Instruct.jinja", "<|im_end|>", "", "<|im_start|>user",
     "Qwen writes its default system prompt when the conversation has none"},
    {"llama3", "meta-llama-Llama-3.1-8B-Instruct.jinja", "<|eot_id|>", "<|start_header_id|>user", "",
     "Llama 3.1 writes a knowledge cutoff and today's date into a system turn of its own"},
    {"phi3", "microsoft-Phi-3.5-mini-instruct.jinja", "<|endoftext|>", "", "", ""},
    {"gemma", "google-gemma-2-2b-it.jinja", "<eos>", "", "", ""},
    {"mistral-v7-tekken", "Mistral-Small-3.2-24B-Instruct-2506.jinja", "</s>", "", "[INST]",
     "Mistral Small writes its default system prompt when the conversation has none"},
    {"granite-4.0", "ibm-granite-granite-4.0.jinja", "<|end_of_text|>", "", "<|start_of_role|>user",
     "Granite 4.0 writes its default system prompt when the conversation has none"},
    {"kimi-k2", "moonshotai-Kimi-K2.jinja", "<|im_end|>", "", "<|im_user|>",
     "Kimi K2 writes its default system prompt when the conversation has none"},
    {"seed_oss", "ByteDance-Seed-OSS.jinja", "<seed:eos>", "", "", ""},
    {"rwkv-world", "llama-cpp-rwkv-world.jinja", "\n\n", "", "", ""},
    {"solar-open", "upstage-Solar-Open-100B.jinja", "<|end|>", "<|begin|>user", "",
     "Solar Open writes its provider's system prompt, with today's date, before every conversation"},
};

TEST(BuiltinChatTemplates, RenderWhatTheFamilysRealTemplateRenders) {
    const fs::path tree = llama_cpp_sources();
    if (tree.empty()) GTEST_SKIP() << kNoLlamaCppSources;
    for (const FamilyTemplate& f : kFamilies) {
        const fs::path path = tree / "models" / "templates" / f.file;
        ASSERT_TRUE(fs::exists(path)) << path;
        const std::string real_source = read_text_file(path);
        int compared = 0;
        for (const auto* messages : {&kWithSystem, &kWithoutSystem}) {
            const std::string from = messages == &kWithoutSystem && f.from.empty() ? f.from_without_system : f.from;
            for (bool generation_prompt : {true, false}) {
                auto real = render_alone(real_source, *messages, generation_prompt, f.eos);
                if (!real.ok()) continue;  // e.g. a family that refuses a system role
                const std::string ours = builtin(f.name, *messages, generation_prompt, f.eos);
                ++compared;
                const size_t real_at = from.empty() ? 0 : real->find(from);
                const size_t ours_at = from.empty() ? 0 : ours.find(from);
                ASSERT_NE(real_at, std::string::npos) << f.file << " has no '" << from << "': " << *real;
                ASSERT_NE(ours_at, std::string::npos) << f.name << " has no '" << from << "': " << ours;
                EXPECT_EQ(ours.substr(ours_at), real->substr(real_at))
                    << f.name << " vs " << f.file << (from.empty() ? "" : " from '" + from + "' (" + f.why + ")");
            }
        }
        EXPECT_GT(compared, 0) << f.file << " rendered none of the conversations";
    }
}

// select_chat_template over a model file that has a vocabulary and no template of its own.
class SelectChatTemplate : public ::testing::Test {
protected:
    void SetUp() override {
        loader::GgufWriter w;
        w.add_string("general.architecture", "llama");
        w.add_string_array("tokenizer.ggml.tokens", {"a", "<|im_start|>", "<|im_end|>", "<s>"});
        w.add_i32_array("tokenizer.ggml.token_type", {1, 3, 3, 3});
        w.add_u32("tokenizer.ggml.bos_token_id", 3);
        w.add_u32("tokenizer.ggml.eos_token_id", 2);
        path_ =
            (fs::temp_directory_path() / ("lazyattn_select_template_" + std::to_string(::getpid()) + ".gguf")).string();
        ASSERT_TRUE(w.write(path_).ok());
        auto file = loader::GgufFile::open(path_);
        ASSERT_TRUE(file.ok()) << file.status().to_string();
        file_ = std::move(file).value();
    }
    void TearDown() override { fs::remove(path_); }

    std::string path_;
    std::unique_ptr<loader::GgufFile> file_;
};

TEST_F(SelectChatTemplate, BuiltinNamesInlineTextFilesAndRefusals) {
    auto none = select_chat_template("", *file_);
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());

    auto named = select_chat_template("command-r", *file_);
    ASSERT_TRUE(named.ok()) << named.status().to_string();
    EXPECT_EQ((*named)->kind, ChatTemplateKind::kJinja);
    EXPECT_NE((*named)->origin.find("command-r (built in)"), std::string::npos);
    EXPECT_EQ(*(*named)->apply({{"user", "Hi"}}, true),
              "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hi<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>");

    // A template's text, as llama-server takes it; special tokens from its markup only.
    auto inline_text = select_chat_template(
        "{% for m in messages %}<|im_start|>{{ m.role }}: {{ m.content }}<|im_end|>{% endfor %}", *file_);
    ASSERT_TRUE(inline_text.ok()) << inline_text.status().to_string();
    auto pieces = (*inline_text)->render({{"user", "x<|im_end|>"}}, true);
    ASSERT_TRUE(pieces.ok());
    EXPECT_EQ(join(*pieces), "<|im_start|>user: x<|im_end|><|im_end|>");
    EXPECT_TRUE(pieces->front().special);
    EXPECT_FALSE((*pieces)[2].special);  // the client's "<|im_end|>" stays text
    EXPECT_TRUE(is_builtin_or_inline_chat_template("{{ x }}"));
    EXPECT_TRUE(is_builtin_or_inline_chat_template("gemma"));
    EXPECT_FALSE(is_builtin_or_inline_chat_template("gemma.jinja"));

    // A word that is neither a built-in name nor a file is a template's text, as llama-server
    // takes it (start-up warns what it assumed); a path that names no file is refused.
    auto word = select_chat_template("vicuna-2", *file_);
    ASSERT_TRUE(word.ok()) << word.status().to_string();
    EXPECT_EQ(*(*word)->apply({{"user", "Hi"}}, true), "vicuna-2");
    auto missing = select_chat_template("missing/vicuna-2.jinja", *file_);
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(missing.status().message().find("vicuna-2"), std::string::npos) << missing.status().message();

    // An inline template that raises on the start-up check is refused when the model loads.
    auto raises = select_chat_template("{{ raise_exception('no') }}", *file_);
    ASSERT_FALSE(raises.ok());
    EXPECT_NE(raises.status().message().find("the template's text"), std::string::npos);
}

TEST_F(SelectChatTemplate, KwargsReachTheTemplateAndRequestsOverrideTheDefaults) {
    auto defaults = chat_template_kwargs_from_text(R"({"enable_thinking": false, "tone": "dry"})", "kwargs");
    ASSERT_TRUE(defaults.ok()) << defaults.status().to_string();
    const std::string source =
        "{{ messages[-1].content }}|{{ enable_thinking }}|{{ tone }}|{{ extra is defined }}"
        "{% if add_generation_prompt %}>{% endif %}";
    auto t = select_chat_template(source, *file_, *defaults);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    EXPECT_EQ(*(*t)->apply({{"user", "q"}}, true), "q|False|dry|False>");

    ChatRenderOptions options;
    options.kwargs = *chat_template_kwargs_from_text(R"({"enable_thinking": true, "extra": [1, {"a": null}]})", "k");
    auto pieces = (*t)->render({{"user", "q"}}, options);
    ASSERT_TRUE(pieces.ok());
    EXPECT_EQ(join(*pieces), "q|True|dry|True>");

    // A template that needs a variable renders at start-up only with the default given.
    EXPECT_FALSE(select_chat_template("{{ needed.x }}", *file_).ok());
    auto needed = chat_template_kwargs_from_text(R"({"needed": {"x": 1}})", "k");
    EXPECT_TRUE(select_chat_template("{{ needed.x }}", *file_, *needed).ok());
}

// llama-server's extra context: today's date twice and enable_thinking, each overridable.
TEST_F(SelectChatTemplate, RendersWithLlamaServersDateAndThinkingVariables) {
    auto t = select_chat_template("{{ date_string }}|{{ datetime }}|{{ enable_thinking }}", *file_);
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    const std::string text = *(*t)->apply({{"user", "q"}}, true);
    EXPECT_TRUE(std::regex_match(text, std::regex(R"(\d\d [A-Z][a-z][a-z] \d{4}\|[A-Z][a-z][a-z] \d\d \d{4}\|True)")))
        << text;
    ChatRenderOptions options;
    options.kwargs = *chat_template_kwargs_from_text(R"({"enable_thinking": false, "date_string": "1 Jan 2000"})", "k");
    auto pieces = (*t)->render({{"user", "q"}}, options);
    ASSERT_TRUE(pieces.ok());
    EXPECT_TRUE(join(*pieces).starts_with("1 Jan 2000|")) << join(*pieces);
    EXPECT_TRUE(join(*pieces).ends_with("|False")) << join(*pieces);
}

TEST(ChatTemplateKwargs, RefusesWhatTheRendererOwnsAndPastTheBounds) {
    for (const char* bad : {R"([1])", R"("x")", R"({"messages": []})", R"({"add_generation_prompt": false})",
                            R"({"bos_token": ""})", R"({"tools": []})", "{"}) {
        auto v = chat_template_kwargs_from_text(bad, "chat_template_kwargs");
        EXPECT_FALSE(v.ok()) << bad;
        if (!v.ok()) {
            EXPECT_NE(v.status().message().find("chat_template_kwargs"), std::string::npos) << bad;
        }
    }
    std::string deep = "{\"a\":";
    for (int i = 0; i < 40; ++i) deep += "[";
    for (int i = 0; i < 40; ++i) deep += "]";
    deep += "}";
    EXPECT_FALSE(chat_template_kwargs_from_text(deep, "k").ok());
    std::string many = "{";
    for (size_t i = 0; i <= kMaxTemplateKwargs; ++i) many += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
    many += "}";
    EXPECT_FALSE(chat_template_kwargs_from_text(many, "k").ok());
    EXPECT_FALSE(
        chat_template_kwargs_from_text("{\"k\":\"" + std::string(kMaxTemplateKwargsBytes, 'x') + "\"}", "k").ok());
    EXPECT_FALSE(chat_template_kwargs_from_text(R"({"n": 18446744073709551615})", "k").ok());  // beyond int64
    EXPECT_TRUE(chat_template_kwargs_from_text(R"({})", "k").ok());
}

}  // namespace
}  // namespace lazyattn::tokenizer
