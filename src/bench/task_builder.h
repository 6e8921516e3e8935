// What the synthetic task families of `bench quality` share, internal to src/bench: seeded draws,
// the filler corpus (sentences of the 2Wiki passages), documents of filler with facts inserted at
// chosen depths, and the suite driver that spreads questions over families x document counts.
// The families themselves live apart: kv, hop and agg in quality_tasks.cpp (also the training
// recipe's generators, through la_rag_layout tasks), the held-out ones in heldout_tasks.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bench/quality_tasks.h"

namespace lazyattn::bench::tasks {

// Draws are made with rng() and modulo, not std::uniform_*_distribution, whose results differ
// between standard libraries: a seed names the same suite everywhere.
class Draw {
public:
    explicit Draw(uint64_t seed) : rng_(seed) {}
    size_t below(size_t n) { return size_t(rng_() % n); }
    double unit() { return double(rng_() >> 11) * 0x1.0p-53; }
    template <typename T>
    const T& pick(const std::vector<T>& v) {
        return v[below(v.size())];
    }

private:
    std::mt19937_64 rng_;
};

struct Corpus {
    std::vector<std::string> sentences;
    std::vector<std::string> titles;
    // The same, less those naming any of `words` (whole words after SQuAD normalisation): filler
    // that cannot state, by accident, a value a task asks or offers as a distractor.
    Corpus without(const std::vector<std::string>& words) const;
};

Corpus corpus_of(const std::vector<QaItem>& items);
int32_t word_count(const std::string& s);

// SQuAD normalisation: lower case, punctuation and articles removed.
std::vector<std::string> normalized_words(const std::string& text);
// Those words joined with a space before and after each (" a b "): a phrase occurs as whole
// words in a text when its normalized_text is a substring of the text's.
std::string normalized_text(const std::string& text);

// A document of about `words` words of shuffled filler with `facts` inserted at the given depths
// (0 = before the first sentence, 1 = after the last). A fact that starts with '\n' is a block
// (a table): it goes on lines of its own.
Passage make_document(Draw& draw, const Corpus& corpus, int32_t words,
                      const std::vector<std::pair<double, std::string>>& facts);

// n distinct values from a generator (whose range must hold n).
template <typename F>
std::vector<std::string> distinct(size_t n, F make) {
    std::set<std::string> seen;
    std::vector<std::string> out;
    while (out.size() < n) {
        std::string v = make();
        if (seen.insert(v).second) out.push_back(v);
    }
    return out;
}

// One question's cell and slot: k documents, the answer's document and depth, the longest
// document allowed.
struct TaskShape {
    int32_t k;
    int32_t answer_doc;
    double depth;
    int32_t doc_words_max;
};

QualityTask task_of(const char* family, const TaskShape& s);
int32_t document_words(Draw& draw, const TaskShape& s, int32_t min_words);

using TaskMaker = std::function<QualityTask(Draw&, const Corpus&, const TaskShape&, int32_t min_words)>;
struct Family {
    std::string name;
    TaskMaker make;
    int32_t max_docs = 64;  // its value pools hold this many distinct facts of a kind
};

// kv, hop and agg (quality_tasks.cpp).
std::vector<Family> generator_families();

// Questions of the named families (each one of `known`), spread evenly over families x
// doc_counts; within a cell, answer positions cycle through every document index and depths
// through five levels. kInvalidArgument for an unknown family, k outside [2, its max_docs], bad
// document lengths or a corpus without sentences.
Expected<std::vector<QualityTask>> make_suite(const QualitySuiteOptions& options, const std::vector<QaItem>& corpus,
                                              const std::vector<Family>& known);

}  // namespace lazyattn::bench::tasks
