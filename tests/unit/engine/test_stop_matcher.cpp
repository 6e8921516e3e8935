#include "engine/sequence/stop_matcher.h"

#include <gtest/gtest.h>

namespace lazyattn::engine {
namespace {

TEST(StopMatcher, StopStringSplitAcrossPiecesNeverLeaks) {
    StopMatcher m({"</answer>", "\n\n"});
    std::string out;
    for (const char* piece : {"The cap", "ital is Par", "is.</ans", "wer> more"}) out += m.push(piece);
    EXPECT_TRUE(m.stopped());
    EXPECT_EQ(out, "The capital is Paris.");
    EXPECT_EQ(m.push("ignored"), "");
}

TEST(StopMatcher, HeldBackPrefixIsReleasedWhenItDiverges) {
    StopMatcher m({"STOP"});
    EXPECT_EQ(m.push("abc ST"), "abc ");
    EXPECT_EQ(m.push("ART"), "START");
    EXPECT_FALSE(m.stopped());
    EXPECT_EQ(m.push("xx S"), "xx ");
    EXPECT_EQ(m.flush(), "S");
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
    StopMatcher m(std::vector<std::string>{});
    EXPECT_EQ(m.push("hello"), "hello");
    EXPECT_EQ(m.flush(), "");
}

}  // namespace
}  // namespace lazyattn::engine
