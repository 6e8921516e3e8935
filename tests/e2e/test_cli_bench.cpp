// The lazyattn binary's bench commands end to end on a synthetic model (bench store, bench
// quality with neighbour copies and --resume, bench rag's open loop); the other commands:
// test_cli.cpp.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "synthetic_model_fixture.h"

#include "cli_run.h"

namespace lazyattn {
namespace {

using cli_test::json_lines;
using cli_test::model_arg;
using cli_test::run_cli;

TEST(Cli, BenchStoreMeasuresEverySource) {
    const std::string json =
        (std::filesystem::temp_directory_path() / ("lazyattn-bench-store-" + std::to_string(getpid()) + ".json"))
            .string();
    auto r = run_cli("bench store " + model_arg() + " --k 2 --doc-tokens 24 --tail-tokens 4 --repetitions 2 --data " +
                     std::string(LAZYATTN_SOURCE_DIR) + "/data/2wiki_sample.jsonl --json " + json);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    std::ifstream in(json);
    const auto j = nlohmann::json::parse(in);
    std::map<std::string, nlohmann::json> by_name;
    for (const auto& s : j["sources"]) by_name[s["source"]] = s;
    ASSERT_EQ(by_name.size(), 4u) << j;
    EXPECT_EQ(by_name["recompute"]["docs_computed"], 4);
    EXPECT_EQ(by_name["disk"]["docs_from_store"], 4);
    EXPECT_EQ(by_name["disk"]["docs_computed"], 0);
    EXPECT_EQ(by_name["ram"]["docs_from_ram"], 4);
    EXPECT_EQ(by_name["floor"]["docs_from_ram"], 4);
    for (const auto& [name, s] : by_name) EXPECT_EQ(s["ttft_ms"].size(), 2u) << name;
}

// `bench quality --neighbours-corpus all` indexes every question's documents before the first
// runs, as precompute indexes its corpus: a conditioned copy's neighbours, hence its answers, do
// not depend on which questions and variants ran with it. `seen` (the serve-time rule) gives the
// early questions a smaller corpus, so it answers differently.
TEST(Cli, BenchQualityNeighbourCopiesDependOnTheCorpusNotTheRun) {
    const auto tmp = std::filesystem::temp_directory_path();
    // The real model: the synthetic one answers every prompt alike, whatever its KV.
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "real model not found (make test installs it)";
    const std::string base = "bench quality --threads 1 --model " LAZYATTN_MODEL_PATH " --data " +
                             std::string(LAZYATTN_SOURCE_DIR) +
                             "/data/2wiki_sample.jsonl --no-wiki --questions 8 --families kv --doc-counts 2 3 "
                             "--max-prompt-words 150 ";
    const auto replies = [&](const std::string& args, const std::string& name) {
        const std::string json = (tmp / ("lazyattn-bq-" + name + "-" + std::to_string(getpid()) + ".json")).string();
        const auto r = run_cli(base + args + " --json " + json, true);
        EXPECT_EQ(r.exit_code, 0) << r.out;
        std::ifstream in(json);
        const auto j = nlohmann::json::parse(in);
        std::filesystem::remove(json);
        std::vector<std::string> out;
        for (const auto& q : j["questions"]) out.push_back(q["replies"]["lazy:neighbours=1"]);
        return out;
    };
    const auto alone = replies("--variants lazy:neighbours=1 --concurrency 1", "alone");
    const auto together =
        replies("--variants lazy lazy:neighbours=1 lazy:neighbours=1+recompute=50% --concurrency 4", "together");
    const auto seen = replies("--variants lazy:neighbours=1 --concurrency 1 --neighbours-corpus seen", "seen");
    ASSERT_EQ(alone.size(), 8u);
    EXPECT_EQ(alone, together);
    EXPECT_NE(alone, seen);
}

// `bench quality --resume FILE`: a run cut after k questions (its progress file holding their
// answers and half a line of the next, as a kill mid-write leaves it) and resumed answers every
// question as the uncut run did, asking only the rest; --report-only reports the partial file;
// other arguments are refused, naming the option, and leave the file as it was.
TEST(Cli, BenchQualityResumedRunAnswersAsAnUncutOne) {
    if (!std::filesystem::exists(LAZYATTN_MODEL_PATH)) GTEST_SKIP() << "real model not found (make test installs it)";
    const auto tmp = std::filesystem::temp_directory_path();
    const auto file = [&](const std::string& name) {
        return (tmp / ("lazyattn-bq-resume-" + name + "-" + std::to_string(getpid()))).string();
    };
    const std::string base = "bench quality --threads 1 --concurrency 1 --model " LAZYATTN_MODEL_PATH " --data " +
                             std::string(LAZYATTN_SOURCE_DIR) +
                             "/data/2wiki_sample.jsonl --no-wiki --questions 6 --families kv --doc-counts 2 3 "
                             "--max-prompt-words 150 --variants lazy balanced+damp=16:-2 ";
    const auto lines_of = [](const std::string& path) {
        std::vector<std::string> lines;
        std::ifstream in(path);
        for (std::string l; std::getline(in, l);) lines.push_back(l);
        return lines;
    };
    const auto replies = [](const std::string& json) {
        std::ifstream in(json);
        const auto j = nlohmann::json::parse(in);
        std::vector<nlohmann::json> out;
        for (const auto& q : j["questions"]) out.push_back(q["replies"]);
        return out;
    };
    const std::string uncut = file("uncut.jsonl"), resumed = file("resumed.jsonl");
    auto r = run_cli(base + "--resume " + uncut + " --json " + uncut + ".json", true);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    const auto uncut_lines = lines_of(uncut);
    ASSERT_EQ(uncut_lines.size(), 1u + 6 * 2);  // the header, then 6 questions x 2 variants
    const auto uncut_replies = replies(uncut + ".json");
    ASSERT_EQ(uncut_replies.size(), 6u);

    // Cut after 2 questions (one line per variant each), mid-way through the next line.
    {
        std::ofstream out(resumed, std::ios::binary);
        for (size_t i = 0; i < 1 + 2 * 2; ++i) out << uncut_lines[i] << "\n";
        out << uncut_lines[5].substr(0, uncut_lines[5].size() / 2);
    }
    r = run_cli(base + "--resume " + resumed + " --report-only --json " + resumed + ".json", true);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    {
        std::ifstream in(resumed + ".json");
        const auto j = nlohmann::json::parse(in);
        EXPECT_EQ(j["answered"]["lazy"], 2);
        EXPECT_EQ(j["answered"]["balanced+damp=16:-2"], 2);
        EXPECT_EQ(j["partial"], true);
        EXPECT_EQ(j["num_questions"], 2);
        EXPECT_EQ(j["accuracy"]["all"]["lazy"]["n"], 2);
    }
    r = run_cli(base + "--resume " + resumed + " --json " + resumed + ".json", true);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("resuming: 4 of 12 answers"), std::string::npos) << r.out;
    EXPECT_EQ(lines_of(resumed).size(), 1u + 6 * 2);  // the rest asked once, the cut line dropped
    EXPECT_EQ(replies(resumed + ".json"), uncut_replies);

    // Other arguments: refused, naming the option, the file untouched.
    const auto size = std::filesystem::file_size(resumed);
    r = run_cli(base + "--seed 2 --resume " + resumed, true);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.out.find("was written with --seed 1, this run has --seed 2"), std::string::npos) << r.out;
    r = run_cli(base + "lazy:damp=16:-2 --resume " + resumed, true);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.out.find("was written with variants"), std::string::npos) << r.out;
    EXPECT_EQ(std::filesystem::file_size(resumed), size);
    for (const auto& f : {uncut, uncut + ".json", resumed, resumed + ".json"}) std::filesystem::remove(f);
}

// bench rag --rate submits the stream as Poisson arrivals, and --windows reports each run in equal
// spans of its own time: every measured request, document lookup and conditioned copy served in
// exactly one span, and the background rows of the measured stream at most the run's (the
// warm-up's fall in no span), none for plain lazy.
TEST(Cli, BenchRagOpenLoopReportsTheRunsOverTime) {
    const std::string json = ::testing::TempDir() + "lazyattn_cli_rag_rate.json";
    const auto r = run_cli("bench rag " + model_arg() +
                               " --docs 6 --doc-tokens 24 --k 2 --output-tokens 2 --requests 12 --warmup-requests 2 "
                               "--rate 50 --windows 3 --modes lazy --quality balanced --condition-after 1 --no-floor "
                               "--threads 1 --json " +
                               json,
                           true);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("open loop, Poisson arrivals at 50 req/s"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("quality=balanced vs lazy, last span (steady state)"), std::string::npos) << r.out;
    std::ifstream in(json);
    const auto j = nlohmann::json::parse(in);
    EXPECT_EQ(j["workload"]["arrival_rate"].get<double>(), 50.0);
    ASSERT_EQ(j["runs"].size(), 2u);
    for (const auto& run : j["runs"]) {
        ASSERT_EQ(run["windows"].size(), 3u);
        int64_t requests = 0, lookups = 0, served = 0, background_rows = 0;
        for (const auto& w : run["windows"]) {
            requests += w["requests"].get<int64_t>();
            lookups += w["conditioned_lookups"].get<int64_t>();
            served += w["conditioned_served"].get<int64_t>();
            background_rows += w["background_rows"].get<int64_t>();
            EXPECT_GE(w["tpot_p50_ms"].get<double>(), 0.0);
            EXPECT_LT(w["start_s"].get<double>(), w["end_s"].get<double>());
            EXPECT_GE(w["completed_per_s"].get<double>(), 0.0);
        }
        EXPECT_EQ(requests, run["measured_requests"].get<int64_t>());
        EXPECT_EQ(lookups, run["conditioned"]["lookups"].get<int64_t>());
        EXPECT_EQ(served, run["conditioned"]["served"].get<int64_t>());
        EXPECT_LE(background_rows, run["conditioned"]["background_rows"].get<int64_t>());
        if (run["label"] == "lazy") {
            EXPECT_EQ(lookups, 0);
            EXPECT_EQ(background_rows, 0);
        } else {
            EXPECT_EQ(run["label"], "quality=balanced");
            EXPECT_EQ(lookups, 2 * requests) << "k = 2 documents looked up per request";
        }
    }
    std::remove(json.c_str());
}

}  // namespace
}  // namespace lazyattn
