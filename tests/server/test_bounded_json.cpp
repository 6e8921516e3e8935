// bounded_json.h: the parse's cost estimate against what the allocator really hands out, and the
// two refusals (a list past its bound, a value past the cost bound) found while parsing.
#include "server/bounded_json.h"

#include <gtest/gtest.h>
#include <malloc.h>

namespace lazyattn::server {
namespace {

std::string list_of(const std::string& item, int n) {
    std::string s = "[";
    for (int i = 0; i < n; ++i) s += (i ? "," : "") + item;
    return s + "]";
}

// The estimate must not be far below the truth for the shapes an attacker would choose (tiny
// objects, tiny strings, numbers) nor for ordinary bodies (long strings).
TEST(BoundedJson, TheEstimateFollowsTheAllocator) {
    for (const std::string& body :
         {"{\"x\":" + list_of(R"({"type":"text","text":"x"})", 50000) + "}", list_of(R"("x")", 100000),
          list_of("12345", 100000), list_of("\"" + std::string(2000, 'w') + "\"", 500)}) {
        const size_t before = mallinfo2().uordblks;
        auto parsed = parse_bounded_json(body, JsonBounds{0, int64_t(1) << 40});
        ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
        const double real = double(mallinfo2().uordblks - before);
        const double estimate = double(estimated_json_bytes(*parsed));
        EXPECT_GT(estimate, 0.7 * real) << body.substr(0, 40) << ": estimated " << estimate << ", allocated " << real;
        EXPECT_LT(estimate, 2.5 * real) << body.substr(0, 40) << ": estimated " << estimate << ", allocated " << real;
    }
}

TEST(BoundedJson, ContentAndDocumentListsAreBoundedWhileParsing) {
    const JsonBounds bounds{3};
    EXPECT_TRUE(parse_bounded_json(R"({"documents":["a","b","c"],"other":[1,2,3,4,5]})", bounds).ok());
    auto r = parse_bounded_json(R"({"messages":[{"content":[{},{},{},{}]}]})", bounds);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("'content' list holds more than 3 items"), std::string::npos);
    EXPECT_FALSE(parse_bounded_json(R"({"documents":["a","b","c","d"]})", bounds).ok());
    // A nested list inside a part is not the part list.
    EXPECT_TRUE(parse_bounded_json(R"({"content":[{"x":[1,2,3,4,5,6]}]})", bounds).ok());
}

TEST(BoundedJson, TinyValuesStopAtTheCostBoundLongTextDoesNot) {
    const std::string tiny = "{\"x\":" + list_of(R"({"a":"x"})", 200000) + "}";
    auto r = parse_bounded_json(tiny, JsonBounds{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("would take more than"), std::string::npos);
    const std::string text = "{\"x\":" + list_of("\"" + std::string(4000, 'w') + "\"", 1000) + "}";
    EXPECT_TRUE(parse_bounded_json(text, JsonBounds{}).ok());
    EXPECT_EQ(parse_bounded_json("{\"a\": 1e999}", JsonBounds{}).status().message().rfind("malformed JSON", 0), 0u);
}

}  // namespace
}  // namespace lazyattn::server
