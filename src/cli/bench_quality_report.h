// The report of `lazyattn bench quality`: every variant's answers to the questions, and the tables
// and JSON made of them (accuracy with a Wilson 95% interval per group; paired differences with
// McNemar's exact p against the first variant and `lazy`, over every question and per family; the
// share of the lazy -> none gap recovered; tokens spent; every reply). The command
// (bench_quality_command.cpp) asks the questions, or reads them back from a progress file.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/quality_tasks.h"
#include "cli/bench_quality_progress.h"
#include "cli/commands.h"
#include "engine/request/document_reuse.h"

namespace lazyattn::cli {

using QualityTaskFilter = std::function<bool(const bench::QualityTask&)>;

// Every variant's answer to every task, and the groups the tables count them in.
struct QualityResults {
    std::vector<bench::QualityTask> tasks;
    std::vector<engine::ReuseVariant> variants;
    std::map<std::string, std::vector<QualityAnswer>> answers;  // per variant, per task
    std::vector<std::string> families;                          // the groups compared per family
    std::vector<std::pair<std::string, QualityTaskFilter>> groups;

    std::vector<bool> correct_where(const std::string& v, const QualityTaskFilter& keep) const {
        std::vector<bool> out;
        for (size_t i = 0; i < tasks.size(); ++i) {
            if (keep(tasks[i])) out.push_back(answers.at(v)[i].correct);
        }
        return out;
    }
};

// A partial progress file's questions: keeps those every variant has answered (the tables pair
// variants question by question), in their order. Prints how many each variant has answered.
void keep_answered_by_all(QualityResults& r, const QualityProgress& progress, nlohmann::json& out);

// Prints the tables of `r` (grouped by every question, family, k and answer position) and fills
// `out` with them and every reply; writes `out` to --json when given. `seconds`: the run's time.
void write_report(const BenchQualityOptions& o, const bench::QualitySuiteOptions& so, const std::string& path,
                  double seconds, QualityResults& r, nlohmann::json& out);

}  // namespace lazyattn::cli
