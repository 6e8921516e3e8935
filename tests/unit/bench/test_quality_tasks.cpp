// The synthetic quality tasks: a seed names one suite; each question's answer sits where the task
// says (document index and depth) and nowhere else a reply could copy it from by accident; the
// cells are covered evenly; scoring follows SQuAD normalisation.
#include <gtest/gtest.h>

#include <map>

#include "bench/quality_tasks.h"
#include "quality_test_corpus.h"

namespace lazyattn::bench {
namespace {

std::vector<QaItem> corpus() { return testing_support::sample_corpus(); }
using testing_support::words;

size_t occurrences(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

TEST(QualityTasks, OneSeedOneSuiteAndCellsCoveredEvenly) {
    QualitySuiteOptions o;
    o.num_questions = 120;
    auto a = make_quality_suite(o, corpus()), b = make_quality_suite(o, corpus());
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->size(), 120u);
    std::map<std::pair<std::string, int32_t>, int> cells;
    for (size_t i = 0; i < a->size(); ++i) {
        EXPECT_EQ((*a)[i].question, (*b)[i].question);
        EXPECT_EQ((*a)[i].documents.back().text, (*b)[i].documents.back().text);
        ++cells[{(*a)[i].family, (*a)[i].num_docs}];
    }
    EXPECT_EQ(cells.size(), 12u);  // 3 families x 4 document counts
    for (const auto& [cell, n] : cells) EXPECT_EQ(n, 10) << cell.first << " k=" << cell.second;
    o.seed = 2;
    auto c = make_quality_suite(o, corpus());
    EXPECT_NE((*c)[0].documents[0].text, (*a)[0].documents[0].text);
}

TEST(QualityTasks, AnswersSitWhereTheTaskSays) {
    QualitySuiteOptions o;
    o.num_questions = 300;
    auto suite = make_quality_suite(o, corpus());
    ASSERT_TRUE(suite.ok());
    for (const QualityTask& t : *suite) {
        ASSERT_EQ(int32_t(t.documents.size()), t.num_docs);
        for (const auto& d : t.documents) {
            const int32_t w = words(d.text);
            EXPECT_GE(w, o.min_doc_words);
            EXPECT_LE(w, o.max_doc_words + 120);  // the last filler sentence may overshoot
        }
        if (t.family == "agg") {
            EXPECT_EQ(t.min_answers, 1);
            EXPECT_EQ(t.answers.size(), 2u);
            continue;
        }
        ASSERT_EQ(t.answers.size(), 1u);
        ASSERT_GE(t.answer_doc, 0);
        ASSERT_LT(t.answer_doc, t.num_docs);
        // The code appears once, in the answer document, at about the stated depth.
        size_t total = 0;
        for (const auto& d : t.documents) total += occurrences(d.text, t.answers[0]);
        EXPECT_EQ(total, 1u) << t.question;
        const std::string& doc = t.documents[size_t(t.answer_doc)].text;
        const size_t at = doc.find(t.answers[0]);
        ASSERT_NE(at, std::string::npos) << t.family << " " << t.question;
        // Facts go between sentences, so short documents place them coarsely.
        if (words(doc) >= 300) {
            EXPECT_NEAR(double(at) / double(doc.size()), t.depth, 0.2) << t.family << " k=" << t.num_docs;
        }
        EXPECT_GT(t.chance, 0.0);
        EXPECT_LE(t.chance, 1.0);
    }
    // Answer positions cycle over every document index.
    std::map<int32_t, int> at_k10;
    for (const QualityTask& t : *suite) {
        if (t.family == "kv" && t.num_docs == 10) ++at_k10[t.answer_doc];
    }
    EXPECT_EQ(at_k10.size(), 10u);
}

TEST(QualityTasks, ScoringNormalisesAndCountsTheAnswersNamed) {
    QualityTask kv;
    kv.answers = {"48213"};
    EXPECT_TRUE(reply_is_correct(kv, "The access code is 48213."));
    EXPECT_FALSE(reply_is_correct(kv, "The access code is 482135."));  // whole words only
    EXPECT_FALSE(reply_is_correct(kv, ""));
    QualityTask agg;
    agg.answers = {"Riga", "Porto"};
    agg.min_answers = 2;
    EXPECT_TRUE(reply_is_correct(agg, "Porto and riga."));
    EXPECT_FALSE(reply_is_correct(agg, "Riga"));
    agg.min_answers = 1;
    EXPECT_TRUE(reply_is_correct(agg, "Riga"));
    EXPECT_FALSE(reply_names_all(agg, "Riga"));
    EXPECT_TRUE(reply_names_all(agg, "riga, Porto"));
    QualityTask wiki;
    wiki.answers = {"The Cahiers du cinéma", "Cahiers"};
    EXPECT_TRUE(reply_is_correct(wiki, "cahiers du cinéma"));
    EXPECT_NEAR(reply_f1(wiki, "Cahiers"), 1.0, 1e-12);
}

TEST(QualityTasks, BadOptionsAreRefused) {
    QualitySuiteOptions o;
    o.families = {"sum"};
    EXPECT_FALSE(make_quality_suite(o, corpus()).ok());
    o = {};
    o.doc_counts = {1};
    EXPECT_FALSE(make_quality_suite(o, corpus()).ok());
    o = {};
    EXPECT_FALSE(make_quality_suite(o, {}).ok());
}

}  // namespace
}  // namespace lazyattn::bench
