// The progress file of `bench quality --resume FILE`: every answered (variant, question) appended
// as one JSON line the moment its batch ends (flushed), so a run of thousands of questions that
// is cut anywhere loses at most the batch in flight, and the same command line carries on from
// there. The first line is a header holding the arguments that decide which questions are asked
// and how they are answered; a file written with other arguments is refused, naming the first
// that differs, since answers to other questions (or of another setting) would be paired as if
// they were the same. Each answer carries its question's identity (seed, family, index, number
// of documents, and a digest of its text), checked against the question regenerated at that
// index, so a file of another question generator is refused too.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/quality_tasks.h"
#include "core/status.h"

namespace lazyattn::cli {

// One variant's answer to one question.
struct QualityAnswer {
    std::string reply;
    bool correct = false;
    double f1 = 0;
    int32_t prompt_tokens = 0, prefill_tokens = 0, recomputed_tokens = 0;
};

// A digest of everything a question asks (its question, answers and documents), FNV-1a 64.
uint64_t question_digest(const bench::QualityTask& task);

class QualityProgress {
public:
    // Opens `path` for a run whose arguments are `arguments` (an object: option name -> value)
    // over `tasks`: creates it (header first) when it does not exist or is empty, otherwise reads
    // its answers and continues it. kInvalidArgument when its header's arguments differ (the
    // message names the option and both values) or an answer's question is not the one at its
    // index; kCorrupt for a line that is not an answer (a last line cut mid-write is dropped:
    // its batch is asked again); kIoError when it cannot be read or written. `read_only`: read
    // it and check it, never write (--report-only; a missing file is kNotFound then).
    static Expected<QualityProgress> open(const std::string& path, const nlohmann::json& arguments,
                                          const std::vector<bench::QualityTask>& tasks, uint64_t seed,
                                          bool read_only = false);
    QualityProgress(QualityProgress&& other) noexcept;
    QualityProgress& operator=(QualityProgress&&) = delete;
    QualityProgress(const QualityProgress&) = delete;
    ~QualityProgress();

    // The recorded answer of `variant` to question `index`, or nullptr.
    const QualityAnswer* find(const std::string& variant, size_t index) const;
    size_t answered(const std::string& variant) const;
    size_t size() const { return answers_.size(); }
    // Appends one batch's answers (variant, question index, answer) and flushes them.
    Status append(const std::vector<std::tuple<std::string, size_t, QualityAnswer>>& batch);

private:
    QualityProgress() = default;

    std::string path_;
    std::FILE* file_ = nullptr;  // open for appending; nullptr when read only
    uint64_t seed_ = 0;
    const std::vector<bench::QualityTask>* tasks_ = nullptr;
    std::map<std::pair<std::string, size_t>, QualityAnswer> answers_;
};

}  // namespace lazyattn::cli
