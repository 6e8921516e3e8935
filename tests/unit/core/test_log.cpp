// Log lines: the text form splits back into key=value pairs, the JSON form parses as one object
// with every field typed, and levels are named.
#include <gtest/gtest.h>

#include "core/log.h"

namespace lazyattn::log {
namespace {

TEST(Log, TextLinesAreKeyValuePairsWithQuotedValuesWhereNeeded) {
    EXPECT_EQ(format_line(Format::kText, "http request",
                          {{"path", "/v1/completions"}, {"status", 200}, {"seconds", 0.25}, {"client", "a b"}}),
              "http request path=/v1/completions status=200 seconds=0.25 client=\"a b\"");
    EXPECT_EQ(format_line(Format::kText, "m", {{"note", "x=\"1\""}}), "m note=\"x=\\\"1\\\"\"");
}

TEST(Log, JsonLinesEscapeStringsAndKeepNumbersNumeric) {
    EXPECT_EQ(format_line(Format::kJson, "model \"loaded\"", {{"layers", 30}, {"path", "a\\b\n"}, {"ratio", 0.5}}),
              "\"msg\":\"model \\\"loaded\\\"\",\"layers\":30,\"path\":\"a\\\\b\\n\",\"ratio\":0.5");
    EXPECT_EQ(format_line(Format::kJson, "m", {{"bad", 1.0 / 0.0}}), "\"msg\":\"m\",\"bad\":null");
    EXPECT_EQ(format_line(Format::kJson, "m", {{"ctl", std::string(1, '\x01')}}), "\"msg\":\"m\",\"ctl\":\"\\u0001\"");
}

TEST(Log, LevelsAreNamedAndUnknownOnesRefused) {
    EXPECT_EQ(*parse_level("debug"), Level::kDebug);
    EXPECT_EQ(*parse_level("off"), Level::kOff);
    EXPECT_FALSE(parse_level("loud").ok());
    configure(Level::kWarn, Format::kText);
    EXPECT_FALSE(enabled(Level::kInfo));
    EXPECT_TRUE(enabled(Level::kError));
    configure(Level::kInfo, Format::kText);
}

}  // namespace
}  // namespace lazyattn::log
