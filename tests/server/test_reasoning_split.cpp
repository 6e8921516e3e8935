// The reasoning split (server/reasoning_split.h): whole replies by format, and the streamed form
// cut at every byte, which must send exactly what the whole split gives and never a partial tag.
#include "server/reasoning_split.h"

#include <gtest/gtest.h>

#include <vector>

namespace lazyattn::server {
namespace {

TEST(ReasoningSplit, FormatNames) {
    for (const char* name : {"none", "auto", "deepseek", "deepseek-legacy"}) {
        auto f = reasoning_format_from_name(name);
        ASSERT_TRUE(f.has_value()) << name;
        EXPECT_STREQ(reasoning_format_name(*f), name);
    }
    EXPECT_FALSE(reasoning_format_from_name("DeepSeek").has_value());
    EXPECT_FALSE(reasoning_format_from_name("").has_value());
}

TEST(ReasoningSplit, WholeReplies) {
    auto d = split_reasoning("<think>\nFirst, 2+2.\n</think>\n\nIt is 4.", ReasoningFormat::kDeepseek);
    EXPECT_TRUE(d.has_reasoning);
    EXPECT_EQ(d.reasoning, "First, 2+2.");
    EXPECT_EQ(d.content, "It is 4.");

    EXPECT_EQ(split_reasoning("  <think>a</think>b", ReasoningFormat::kAuto).reasoning, "a");
    // No thoughts: the text as it is.
    auto plain = split_reasoning("  Just <think> later", ReasoningFormat::kDeepseek);
    EXPECT_FALSE(plain.has_reasoning);
    EXPECT_EQ(plain.content, "  Just <think> later");
    // Thoughts that never close (max_tokens reached) are reasoning.
    auto open = split_reasoning("<think>still thinking ", ReasoningFormat::kDeepseek);
    EXPECT_EQ(open.reasoning, "still thinking");
    EXPECT_EQ(open.content, "");
    // The prompt opened the thoughts (DeepSeek-R1's generation prompt ends with <think>).
    auto started = split_reasoning("hmm\n</think>Answer", ReasoningFormat::kDeepseek, true);
    EXPECT_EQ(started.reasoning, "hmm");
    EXPECT_EQ(started.content, "Answer");
    // none: nothing parsed; legacy: reasoning, and the content keeps the tags.
    EXPECT_EQ(split_reasoning("<think>a</think>b", ReasoningFormat::kNone).content, "<think>a</think>b");
    EXPECT_EQ(split_reasoning("<think>a</think>b", ReasoningFormat::kNone).reasoning, "");
    auto legacy = split_reasoning("<think>a</think>b", ReasoningFormat::kDeepseekLegacy);
    EXPECT_EQ(legacy.reasoning, "a");
    EXPECT_EQ(legacy.content, "<think>a</think>b");
    // Only the first close tag ends the thoughts.
    auto twice = split_reasoning("<think>x</think>y</think>z", ReasoningFormat::kDeepseek);
    EXPECT_EQ(twice.reasoning, "x");
    EXPECT_EQ(twice.content, "y</think>z");
}

TEST(ReasoningSplit, PromptOpensReasoning) {
    EXPECT_TRUE(prompt_opens_reasoning("<|Assistant|><think>\n"));
    EXPECT_TRUE(prompt_opens_reasoning("x<think>"));
    EXPECT_FALSE(prompt_opens_reasoning("<think>\n</think>\n\n"));
    EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
}

// Feeds `text` in pieces cut at `cuts` and checks the deltas against the whole split.
void expect_stream_matches(const std::string& text, ReasoningFormat format, bool started,
                           const std::vector<size_t>& cuts) {
    const ReasoningParts whole = split_reasoning(text, format, started);
    ReasoningStream stream(format, started);
    std::string reasoning, content;
    size_t at = 0;
    for (size_t cut : cuts) {
        const auto d = stream.feed(std::string_view(text).substr(at, cut - at));
        reasoning += d.reasoning;
        content += d.content;
        // Nothing sent is ever taken back: a partial tag or whitespace to drop is held.
        EXPECT_TRUE(std::string_view(whole.reasoning).starts_with(reasoning)) << text << " at " << cut;
        EXPECT_TRUE(std::string_view(whole.content).starts_with(content)) << text << " at " << cut;
        at = cut;
    }
    const auto d = stream.feed(std::string_view(text).substr(at));
    reasoning += d.reasoning;
    content += d.content;
    const auto last = stream.finish();
    reasoning += last.reasoning;
    content += last.content;
    std::string where;
    for (size_t c : cuts) where += std::to_string(c) + " ";
    EXPECT_EQ(reasoning, whole.reasoning) << "'" << text << "' cut at " << where;
    EXPECT_EQ(content, whole.content) << "'" << text << "' cut at " << where;
}

TEST(ReasoningSplit, StreamEqualsTheWholeSplitWhereverTheTextIsCut) {
    const std::vector<std::string> texts = {
        "<think>\nFirst, 2+2.\n</think>\n\nIt is 4.",
        "  <think>  a b  </think>  c ",
        "<think></think>answer",
        "<thin",
        "<think>never closed ",
        "plain answer, no thoughts",
        "  < think> not a tag",
        "<think>a</thinking></think>b</think>",
        "\n\n",
        "",
    };
    for (ReasoningFormat format : {ReasoningFormat::kNone, ReasoningFormat::kAuto, ReasoningFormat::kDeepseek,
                                   ReasoningFormat::kDeepseekLegacy}) {
        for (bool started : {false, true}) {
            for (const std::string& text : texts) {
                expect_stream_matches(text, format, started, {});
                for (size_t i = 0; i <= text.size(); ++i) {
                    expect_stream_matches(text, format, started, {i});
                    for (size_t j = i; j <= text.size(); j += 3) expect_stream_matches(text, format, started, {i, j});
                }
                // Byte by byte.
                std::vector<size_t> every;
                for (size_t i = 0; i <= text.size(); ++i) every.push_back(i);
                expect_stream_matches(text, format, started, every);
            }
        }
    }
}

TEST(ReasoningSplit, StreamHoldsOnlyWhatMayBeATag) {
    ReasoningStream s(ReasoningFormat::kDeepseek);
    auto d = s.feed("<thi");
    EXPECT_TRUE(d.empty());  // may become <think>
    d = s.feed("nk>Let me see");
    EXPECT_EQ(d.reasoning, "Let me see");
    d = s.feed(" now</th");
    EXPECT_EQ(d.reasoning, " now");  // "</th" held: it may close the thoughts
    d = s.feed("ink>\n\nDone");
    EXPECT_EQ(d.reasoning, "");
    EXPECT_EQ(d.content, "Done");
    d = s.feed(" <b>");
    EXPECT_EQ(d.content, " <b>");  // after the thoughts nothing is held

    ReasoningStream plain(ReasoningFormat::kDeepseek);
    d = plain.feed("Hello");
    EXPECT_EQ(d.content, "Hello");  // not a prefix of <think>: sent at once
}

}  // namespace
}  // namespace lazyattn::server
