#include "cli/bench_quality_progress.h"

#include <algorithm>
#include <cinttypes>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace lazyattn::cli {
namespace {

constexpr const char* kHeaderKey = "bench_quality_progress";

void mix(uint64_t& h, const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;  // a separator, so "ab"+"c" and "a"+"bc" differ
}

std::string hex(uint64_t x) {
    char b[17];
    std::snprintf(b, sizeof b, "%016" PRIx64, x);
    return b;
}

// The first option whose value differs between the file's header and this run, as a message.
Status compare_arguments(const std::string& path, const nlohmann::json& recorded, const nlohmann::json& asked) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : recorded.items()) keys.push_back(k);
    for (const auto& [k, v] : asked.items()) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    for (const auto& key : keys) {
        const nlohmann::json was = recorded.contains(key) ? recorded[key] : nlohmann::json("(not given)");
        const nlohmann::json now = asked.contains(key) ? asked[key] : nlohmann::json("(not given)");
        if (was == now) continue;
        return invalid_argument(path + " was written with " + key + " " + was.dump() + ", this run has " + key + " " +
                                now.dump() +
                                ": resume it with the arguments of its first line, or give --resume "
                                "another file");
    }
    return {};
}

}  // namespace

uint64_t question_digest(const bench::QualityTask& t) {
    uint64_t h = 14695981039346656037ull;
    mix(h, t.family);
    mix(h, t.question);
    for (const auto& a : t.answers) mix(h, a);
    for (const auto& d : t.documents) {
        mix(h, d.title);
        mix(h, d.text);
    }
    return h;
}

Expected<QualityProgress> QualityProgress::open(const std::string& path, const nlohmann::json& arguments,
                                                const std::vector<bench::QualityTask>& tasks, uint64_t seed,
                                                bool read_only) {
    QualityProgress p;
    p.path_ = path;
    p.seed_ = seed;
    p.tasks_ = &tasks;
    std::error_code ec;
    const bool exists = std::filesystem::exists(path, ec);
    if (read_only && !exists) return not_found(path + ": no such progress file");
    std::string text;
    if (exists) {
        std::ifstream in(path, std::ios::binary);
        if (!in) return io_error(path + ": cannot read it");
        std::ostringstream ss;
        ss << in.rdbuf();
        text = ss.str();
    }
    // A last line without its newline was cut mid-write: its batch is asked again.
    const size_t whole = text.empty() || text.back() == '\n' ? text.size() : text.rfind('\n') + 1;
    const bool cut = whole != text.size();
    text.resize(whole);
    std::istringstream lines(text);
    std::string line;
    size_t number = 0;
    bool have_header = false;
    while (std::getline(lines, line)) {
        ++number;
        if (line.empty()) continue;
        const auto j = nlohmann::json::parse(line, nullptr, false);
        const std::string where = path + " line " + std::to_string(number);
        if (!have_header) {
            if (!j.is_object() || !j.contains(kHeaderKey) || !j.contains("arguments"))
                return corrupt(where + ": not a bench quality progress header");
            LA_RETURN_IF_ERROR(compare_arguments(path, j["arguments"], arguments));
            have_header = true;
            continue;
        }
        if (!j.is_object() || !j.contains("variant") || !j.contains("index") || !j["index"].is_number_unsigned())
            return corrupt(where + ": not an answer");
        const size_t i = j["index"].get<size_t>();
        const std::string variant = j["variant"].get<std::string>();
        const auto& vs = arguments.contains("variants") ? arguments["variants"] : nlohmann::json::array();
        if (std::find(vs.begin(), vs.end(), variant) == vs.end())
            return corrupt(where + ": variant '" + variant + "' is not one of this run's");
        if (i >= tasks.size() || j.value("seed", uint64_t(0)) != seed || j.value("family", "") != tasks[i].family ||
            j.value("k", -1) != tasks[i].num_docs || j.value("digest", "") != hex(question_digest(tasks[i])))
            return invalid_argument(where + ": its question is not question " + std::to_string(i) +
                                    " of this run (the question generator changed since it was written?)");
        QualityAnswer a;
        a.reply = j.value("reply", "");
        a.correct = j.value("correct", false);
        a.f1 = j.value("f1", 0.0);
        a.prompt_tokens = j.value("prompt_tokens", 0);
        a.prefill_tokens = j.value("prefill_tokens", 0);
        a.recomputed_tokens = j.value("recomputed_tokens", 0);
        p.answers_.emplace(std::make_pair(variant, i), std::move(a));  // the first answer recorded stays
    }
    if (read_only) {
        if (!have_header) return corrupt(path + ": empty, no header");
        return p;
    }
    if (cut) {
        std::filesystem::resize_file(path, whole, ec);
        if (ec) return io_error(path + ": cannot drop its cut last line: " + ec.message());
    }
    p.file_ = std::fopen(path.c_str(), "ab");
    if (p.file_ == nullptr) return io_error(path + ": cannot open it for appending");
    if (!have_header) {
        const std::string header = nlohmann::json{{kHeaderKey, 1}, {"arguments", arguments}}.dump() + "\n";
        if (std::fputs(header.c_str(), p.file_) < 0 || std::fflush(p.file_) != 0)
            return io_error(path + ": cannot write its header");
    }
    return p;
}

QualityProgress::QualityProgress(QualityProgress&& o) noexcept
    : path_(std::move(o.path_)),
      file_(std::exchange(o.file_, nullptr)),
      seed_(o.seed_),
      tasks_(o.tasks_),
      answers_(std::move(o.answers_)) {}

QualityProgress::~QualityProgress() {
    if (file_ != nullptr) std::fclose(file_);
}

const QualityAnswer* QualityProgress::find(const std::string& variant, size_t index) const {
    const auto it = answers_.find({variant, index});
    return it == answers_.end() ? nullptr : &it->second;
}

size_t QualityProgress::answered(const std::string& variant) const {
    return size_t(
        std::count_if(answers_.begin(), answers_.end(), [&](const auto& e) { return e.first.first == variant; }));
}

Status QualityProgress::append(const std::vector<std::tuple<std::string, size_t, QualityAnswer>>& batch) {
    if (file_ == nullptr) return internal_error(path_ + ": opened read only");
    std::string out;
    for (const auto& [variant, i, a] : batch) {
        const bench::QualityTask& t = (*tasks_)[i];
        out += nlohmann::json{{"variant", variant},
                              {"index", i},
                              {"seed", seed_},
                              {"family", t.family},
                              {"k", t.num_docs},
                              {"digest", hex(question_digest(t))},
                              {"reply", a.reply},
                              {"correct", a.correct},
                              {"f1", a.f1},
                              {"prompt_tokens", a.prompt_tokens},
                              {"prefill_tokens", a.prefill_tokens},
                              {"recomputed_tokens", a.recomputed_tokens}}
                   .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
               "\n";
        answers_.emplace(std::make_pair(variant, i), a);
    }
    // One write per batch: a cut leaves whole lines and at most one line cut short.
    if (std::fwrite(out.data(), 1, out.size(), file_) != out.size() || std::fflush(file_) != 0)
        return io_error(path_ + ": cannot append answers");
    return {};
}

}  // namespace lazyattn::cli
