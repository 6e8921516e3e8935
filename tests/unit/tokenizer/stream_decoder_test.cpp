#include <gtest/gtest.h>

#include <map>

#include "core/utf8.h"
#include "model_fixture.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::tokenizer {
using namespace text;

namespace {

// A tokenizer whose tokens are given byte strings, to split characters exactly where a test wants.
class FakeTokenizer final : public Tokenizer {
public:
    explicit FakeTokenizer(std::map<TokenId, std::string> pieces) : pieces_(std::move(pieces)) {}
    std::vector<TokenId> encode(std::string_view, bool, bool) const override { return {}; }
    std::string token_to_piece(TokenId id, bool render_special) const override {
        if (id == kControl) return render_special ? "<ctl>" : "";
        const auto it = pieces_.find(id);
        return it == pieces_.end() ? std::string() : it->second;
    }
    int32_t vocab_size() const override { return 100; }
    TokenId bos_id() const override { return -1; }
    TokenId eos_id() const override { return -1; }
    bool add_bos() const override { return false; }
    bool is_end_of_generation(TokenId) const override { return false; }
    std::optional<TokenId> find_token(std::string_view) const override { return std::nullopt; }
    std::string pre_type() const override { return "fake"; }
    std::string model_type() const override { return "fake"; }

    static constexpr TokenId kControl = 99;

private:
    std::map<TokenId, std::string> pieces_;
};

// 😀 is F0 9F 98 80; 日 is E6 97 A5.
const FakeTokenizer kFake({{1, "a"},
                           {2, "\xF0\x9F"},
                           {3, "\x98"},
                           {4,
                            "\x80"
                            "b"},
                           {5, "\xE6"},
                           {6, "\x97\xA5"},
                           {7, "\x80"},
                           {8, "\xF0\x9F\x98"}});

TEST(StreamDecoder, HoldsBackSplitCharacters) {
    StreamDecoder d(kFake);
    EXPECT_EQ(d.push(1), "a");
    EXPECT_EQ(d.push(2), "");
    EXPECT_EQ(d.push(3), "");
    EXPECT_EQ(d.push(4),
              "\xF0\x9F\x98\x80"
              "b");
    EXPECT_EQ(d.push(5), "");
    EXPECT_EQ(d.push(6), "\xE6\x97\xA5");
    EXPECT_EQ(d.flush(), "");
}

TEST(StreamDecoder, InvalidBytesAreReplacedAtOnce) {
    StreamDecoder d(kFake);
    EXPECT_EQ(d.push(7), "\uFFFD");  // a lone continuation byte can never complete
    EXPECT_EQ(d.push(5), "");
    EXPECT_EQ(d.push(1),
              "\uFFFD"
              "a");  // a lead byte interrupted by ASCII
}

TEST(StreamDecoder, FlushEmitsLeftoversAsReplacement) {
    StreamDecoder d(kFake);
    EXPECT_EQ(d.push(8), "");
    EXPECT_EQ(d.flush(), "\uFFFD");
    EXPECT_EQ(d.flush(), "");
    EXPECT_EQ(d.push(1), "a");
}

TEST(StreamDecoder, ControlTokensFollowRenderSpecial) {
    StreamDecoder plain(kFake);
    EXPECT_EQ(plain.push(FakeTokenizer::kControl), "");
    StreamDecoder special(kFake, /*render_special=*/true);
    EXPECT_EQ(special.push(FakeTokenizer::kControl), "<ctl>");
}

TEST(StreamDecoder, RealModelEmojiAndCjk) {
    LA_REQUIRE_SMOLLM(tok);
    const std::string text =
        "Hi 😀👍🏽 日本語のテキスト 你好，世界！ 👨‍👩‍👧‍👦 "
        "done";
    const std::vector<TokenId> ids = tok.encode(text, false, false);
    StreamDecoder d(tok);
    std::string streamed;
    size_t num_held = 0;
    for (const TokenId id : ids) {
        const std::string out = d.push(id);
        EXPECT_TRUE(is_valid_utf8(out)) << "token " << id;
        if (out.empty()) ++num_held;
        streamed += out;
    }
    streamed += d.flush();
    EXPECT_EQ(streamed, text);
    EXPECT_GT(num_held, 0u) << "expected some characters split across tokens";
}

}  // namespace
}  // namespace lazyattn::tokenizer
