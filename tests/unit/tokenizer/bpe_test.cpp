#include "tokenizer/bpe.h"

#include <gtest/gtest.h>

namespace lazyattn::tokenizer {
namespace {

using Symbols = std::vector<std::string_view>;

TEST(BpeMerges, RanksFollowMergeOrder) {
    const BpeMerges m = BpeMerges::build({"a b", "b c", "ab c", "a b"});
    EXPECT_EQ(m.rank("a", "b"), 0);  // the first of a duplicated pair keeps its rank
    EXPECT_EQ(m.rank("b", "c"), 1);
    EXPECT_EQ(m.rank("ab", "c"), 2);
    EXPECT_EQ(m.rank("c", "a"), -1);
    EXPECT_EQ(m.rank("a", "bc"), -1);
}

TEST(BpeMerges, MergesLowestRankFirst) {
    const BpeMerges m = BpeMerges::build({"a b", "b c", "ab c"});
    EXPECT_EQ(m.merge("abc"), (Symbols{"abc"}));
    // "b c" outranks nothing here: "a b" (rank 0) wins, so "bc" never forms.
    EXPECT_EQ(m.merge("abcbc"), (Symbols{"abc", "bc"}));
}

TEST(BpeMerges, TiesGoToTheLeftmostPair) {
    const BpeMerges m = BpeMerges::build({"a a"});
    EXPECT_EQ(m.merge("aaa"), (Symbols{"aa", "a"}));
    EXPECT_EQ(m.merge("aaaa"), (Symbols{"aa", "aa"}));
}

TEST(BpeMerges, SymbolsAreUtf8Characters) {
    // "Ġ" is two bytes; it is one symbol and merges as one.
    const BpeMerges m = BpeMerges::build({"Ġ Ġ", "ĠĠ ĠĠ"});
    EXPECT_EQ(m.merge("ĠĠĠĠĠ"), (Symbols{"ĠĠĠĠ", "Ġ"}));
    EXPECT_EQ(m.merge("é"), (Symbols{"é"}));
}

TEST(BpeMerges, EmptyWordAndNoMerges) {
    const BpeMerges m = BpeMerges::build({});
    EXPECT_TRUE(m.merge("").empty());
    EXPECT_EQ(m.merge("ab"), (Symbols{"a", "b"}));
}

TEST(BpeMerges, MalformedMergeLinesAreHarmless) {
    const BpeMerges m = BpeMerges::build({"nospace", " x y"});
    EXPECT_EQ(m.rank(" x", "y"), 1);  // the separator is the first space after position 0
    EXPECT_EQ(m.merge("nospace"), (Symbols{"n", "o", "s", "p", "a", "c", "e"}));
}

}  // namespace
}  // namespace lazyattn::tokenizer
