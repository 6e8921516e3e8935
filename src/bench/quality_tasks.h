// The questions `lazyattn bench quality` asks: synthetic multi-document tasks generated from a
// seed (in the spirit of RULER), plus the 2WikiMultihopQA sample. Every synthetic question has a
// short, checkable answer that sits in known documents at a known depth, so accuracy can be
// broken down by task, by number of documents k and by the answer's document index:
//
//   kv   key-value retrieval: every document states one "access code"; the question asks for one
//        of them (answer in document `answer_doc`, at `depth`).
//   hop  two hops: one document says who owns an account, another gives that account's code;
//        the rest state other owners and other codes (answer_doc = the code's document).
//   agg  aggregation: two documents each report a delivery of the asked item to a city, the
//        others deliveries of another item; the question asks for both cities. A reply counts
//        when it names at least one of them (min_answers): SmolLM2-135M names both in none of
//        20 tries even with full attention, which would leave the family without signal;
//        reply_names_all() gives the strict score.
//
// Filler text is real prose (sentences of the 2Wiki passages, shuffled), so documents read like
// retrieved passages and are 100-1000 tokens long (word counts, about 1.3 tokens a word).
//
// kv, hop and agg are also what the block fine-tuning recipe has trained on (la_rag_layout
// tasks). The families it must never see (attr, bridge, table) live apart, in heldout_tasks.h:
// make_quality_suite refuses them, make_benchmark_suite (what `bench quality` calls) makes both.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/qa_dataset.h"

namespace lazyattn::bench {

struct QualityTask {
    std::string family;       // "kv", "hop", "agg", "2wiki" or a held-out one (heldout_tasks.h)
    int32_t num_docs = 0;     // k
    int32_t answer_doc = -1;  // index of the document holding the answer; -1: several or unknown
    double depth = -1;        // where the answer sits in it: 0 = first sentence, 1 = last; -1 unknown
    std::vector<Passage> documents;
    std::string question;
    std::vector<std::string> answers;
    int32_t min_answers = 1;  // answers the reply must name to count (any one by default)
    double chance = 0;        // accuracy of naming a candidate from the documents at random (0: unknown)
};

struct QualitySuiteOptions {
    uint64_t seed = 1;
    int32_t num_questions = 480;  // synthetic questions, split evenly over families x doc_counts
    std::vector<std::string> families{"kv", "hop", "agg"};
    std::vector<int32_t> doc_counts{2, 5, 10, 20};
    int32_t min_doc_words = 75;       // about 100 tokens
    int32_t max_doc_words = 750;      // about 1000 tokens
    int32_t max_prompt_words = 1000;  // k x document length stays under this unless k x min_doc_words is more
};

// kv, hop and agg only. kInvalidArgument for another family, k outside [2, 64], or a corpus
// without sentences.
Expected<std::vector<QualityTask>> make_quality_suite(const QualitySuiteOptions& options,
                                                      const std::vector<QaItem>& corpus);

// The QA items themselves (the 2Wiki sample) as tasks.
std::vector<QualityTask> qa_tasks(const std::vector<QaItem>& items);

// Whether a reply answers the task: after SQuAD normalisation (lower case, no punctuation or
// articles), at least min_answers of the answers occur in it as whole-word substrings.
bool reply_is_correct(const QualityTask& task, const std::string& reply);
// Whether it names every answer.
bool reply_names_all(const QualityTask& task, const std::string& reply);
// SQuAD token F1 of a reply against the best answer.
double reply_f1(const QualityTask& task, const std::string& reply);

}  // namespace lazyattn::bench
