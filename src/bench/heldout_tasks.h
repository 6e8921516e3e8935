// HELD OUT FROM TRAINING. The task families here exist to measure what block fine-tuning (or any
// other change) does on questions its training data never showed: their facts, questions, value
// pools and document layouts share no sentence shape with kv/hop/agg (quality_tasks.h, which
// the recipe has trained on) nor with any training generator. They must never be imported,
// called or imitated by the training data tools: not by scripts/finetune/, not by
// `la_rag_layout tasks` (which calls make_quality_suite, and that refuses these families).
// tests/unit/bench/test_heldout_apart.py checks the training side names none of this file's
// functions or templates.
//
//   attr    attributes of people: k biography-style documents (titled with the person's name),
//           each giving one person's birthplace, instrument and trade in sentences worded unlike
//           kv's; the question asks one attribute of one person (answer in `answer_doc`, at
//           `depth`; the other documents give other people other values of every attribute).
//   bridge  a bridge between two documents: one says who founded a company, another where that
//           company has its head office; the rest state other founders or other head offices.
//           The question names the founder and asks the city (answer_doc = the head office's
//           document).
//   table   a table in each document (markdown or CSV, three rows of mountain huts: altitude,
//           beds, warden), amid prose; the question asks one cell by the row's hut and a column
//           (answer_doc = the table holding the row, depth = where the table sits).
//
// Every answer is a short string found, as whole words, in its document only (filler sentences
// that name any value of the task are left out); chance is one over the candidates of the asked
// kind in the prompt.
#pragma once

#include <string>
#include <vector>

#include "bench/quality_tasks.h"

namespace lazyattn::bench {

// attr, bridge, table.
const std::vector<std::string>& heldout_family_names();
// kv, hop, agg, then the held-out families.
const std::vector<std::string>& all_family_names();
// Every family, then the groups heldout and all: what --families accepts.
const std::vector<std::string>& family_choices();
bool is_heldout_family(const std::string& family);

// Family names with groups expanded, duplicates dropped, order kept: "heldout" is attr, bridge,
// table; "all" is every family. kInvalidArgument for a name that is neither.
Expected<std::vector<std::string>> expand_families(const std::vector<std::string>& names);

// The questions of `bench quality`: make_quality_suite's, over any families and groups (at most
// 24 documents per question for the held-out ones, whose value pools are that deep).
Expected<std::vector<QualityTask>> make_benchmark_suite(const QualitySuiteOptions& options,
                                                        const std::vector<QaItem>& corpus);

}  // namespace lazyattn::bench
