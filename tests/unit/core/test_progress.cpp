// ProgressBar: in a log, one line per tenth of the work (never more, however often it is
// updated), each saying how far and how long is left; on a terminal, one line redrawn in place.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/progress.h"

namespace lazyattn {
namespace {

std::string written(std::FILE* f) {
    std::rewind(f);
    std::string s;
    for (int c; (c = std::fgetc(f)) != EOF;) s.push_back(char(c));
    return s;
}

int count(const std::string& s, char c) { return int(std::count(s.begin(), s.end(), c)); }

TEST(Progress, LogsGetALinePerTenthWithWhatIsLeft) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    {
        ProgressBar bar("questions", 200, f, false);
        for (int i = 1; i <= 200; ++i) bar.update(i);
        bar.update(200);  // repeated: nothing more
    }
    const std::string s = written(f);
    EXPECT_EQ(count(s, '\n'), 10) << s;
    EXPECT_NE(s.find("questions: 20/200 (10%)"), std::string::npos) << s;
    EXPECT_NE(s.find("questions: 200/200 (100%)"), std::string::npos) << s;
    EXPECT_NE(s.find("s left"), std::string::npos) << s;
    EXPECT_EQ(s.find('\r'), std::string::npos);
    std::fclose(f);
}

TEST(Progress, ALogSkipsTenthsJumpedOverAndClampsOvershoot) {
    std::FILE* f = std::tmpfile();
    {
        ProgressBar bar("x", 10, f, false);
        bar.update(0);   // nothing done: no line
        bar.update(5);   // 50%
        bar.update(99);  // past the end: 100%
    }
    const std::string s = written(f);
    EXPECT_EQ(count(s, '\n'), 2) << s;
    EXPECT_NE(s.find("x: 10/10 (100%)"), std::string::npos) << s;
    std::fclose(f);
}

// The percentage is the work done, not the tenth that triggered the line (7 of 9 is 77%, not 70%).
TEST(Progress, ALogLineSaysTheRealPercentage) {
    std::FILE* f = std::tmpfile();
    {
        ProgressBar bar("x", 9, f, false);
        bar.update(7);
    }
    const std::string s = written(f);
    EXPECT_NE(s.find("x: 7/9 (77%)"), std::string::npos) << s;
    std::fclose(f);
}

TEST(Progress, ATerminalGetsOneLineRedrawnInPlace) {
    std::FILE* f = std::tmpfile();
    {
        ProgressBar bar("x", 4, f, true);
        for (int i = 1; i <= 4; ++i) bar.update(i);
    }
    const std::string s = written(f);
    EXPECT_EQ(count(s, '\r'), 4) << s;
    EXPECT_EQ(count(s, '\n'), 1) << s;  // finish() ends the line
    EXPECT_NE(s.find("4/4"), std::string::npos);
    std::fclose(f);
}

}  // namespace
}  // namespace lazyattn
