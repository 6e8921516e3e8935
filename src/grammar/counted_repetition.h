// Open-ended repetitions in the order the grammar engine decodes cheaply.
//
// XGrammar (0.1.27; its EBNF parser's repetition ranges) reads X{m,} with m of 15 or more as
// X* X{m-15} X X ... X (the last 15 written out): the unbounded star first. The language is right
// but ambiguous: after n symbols the Earley parser keeps one state for every way of sharing them
// between the star and the counted part, up to m states at once, and every token mask walks them
// all. A JSON schema's `"minLength": 1800` string (XGrammar's converter writes it as
// [^"\\\r\n]{1800,}) cost ~80-500 ms per mask on the embedded model's vocabulary, growing with
// the string, against a ~10 ms decode step (docs/benchmarks.md §14). X{m} X* is the same
// language with one parse: the count first, then the star, ~0.2 ms per mask.
//
// The rewrite is applied to every EBNF text before XGrammar compiles it: a request's GBNF
// grammar, and the EBNF XGrammar's own converters write for a JSON schema or a regex
// (minItems on arrays reaches it the same way).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lazyattn::grammar {

// The smallest m for which XGrammar puts the star first (its parser writes out shorter counts).
constexpr int64_t kCountedRepetitionFrom = 15;

// `ebnf` with every X{m,} (X a literal, a character class, a rule name, a group or a macro call;
// m >= kCountedRepetitionFrom) written as X{m} X*, and the same language written star first with
// the same X twice (X* X{m}, X* X{m,n}, X* X{m,}; after X+ the count is m + 1) too. Strings,
// character classes and comments are copied as they are; anything the scan cannot place (a
// repetition with nothing before it) is left for XGrammar's parser to judge. A star before a
// count of another element ([a-z]* [a-c]{500}) is left as the request wrote it.
std::string with_counted_repetitions_first(std::string_view ebnf);

}  // namespace lazyattn::grammar
