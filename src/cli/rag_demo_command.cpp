// `lazyattn demo`: the RAG demo of `make run`. Questions from a 2WikiMultihopQA file, each with its
// retrieved passages as documents, asked once per run with the passages re-shuffled between
// runs, in several cache modes side by side (one engine per mode, so documents recurring across
// questions are reused too). Prints each answer with its TTFT and cache hits, then a summary.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <random>

#include <nlohmann/json.hpp>

#include "bench/qa_dataset.h"
#include "cli/cli_options.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/data_files.h"
#include "cli/model_path.h"
#include "engine/loading/loaded_model.h"
#include "engine/request/rag_prompt.h"
#include "engine/sync_engine.h"

namespace lazyattn::cli {
namespace {

struct ModeTotals {
    double ttft_first_ms = 0, ttft_repeat_ms = 0;
    int64_t prefilled = 0, reused = 0, hits = 0, misses = 0;
    int first_runs = 0, repeat_runs = 0;
};

std::string one_line(std::string s) {
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s.size() > 90 ? s.substr(0, 87) + "..." : s;
}

constexpr const char* kDemoSystem = "Answer the question using the documents. Reply with a short answer only.";

int fail(const Status& st, int code = 1) {
    std::cerr << "error: " << st.to_string() << "\n";
    return code;
}

// One cache mode over every question: each question's documents as retrieved, then shuffled
// (--runs), one line per run and the mode's totals.
Expected<ModeTotals> run_mode(const RagDemoOptions& o, const engine::LoadedModel& lm,
                              const std::optional<tokenizer::ChatTemplate>& tmpl, engine::CacheMode mode,
                              const std::vector<bench::QaItem>& questions) {
    engine::EngineConfig ec = engine_config_for(o.common);
    ec.cache_mode = mode;
    engine::SyncEngine eng(*lm.model, *lm.tokenizer, ec);
    ModeTotals t;
    std::mt19937_64 rng(7);
    for (const auto& q : questions) {
        engine::RagPromptText text{kDemoSystem, q.documents, q.question};
        std::printf("\nQ: %s   (expected: %s)\n", q.question.c_str(), q.answers.empty() ? "?" : q.answers[0].c_str());
        for (int run = 0; run < o.runs; ++run) {
            if (run > 0) std::shuffle(text.documents.begin(), text.documents.end(), rng);
            LA_ASSIGN_OR_RETURN(auto req, engine::build_rag_request(*lm.tokenizer, tmpl, text));
            req.max_tokens = 24;
            LA_ASSIGN_OR_RETURN(const engine::RagResult r, eng.run(req));
            const auto& s = r.stats;
            // Fixed widths: the columns line up whatever the run and the numbers.
            std::printf("  run %-2d %-20s TTFT %8.1f ms  prefilled %5d  reused %5d  docs hit %2d/%-2d  A: %s\n",
                        run + 1, run == 0 ? "(docs as retrieved)" : "(docs shuffled)", s.ttft_ms, s.prefill_tokens,
                        s.reused_tokens, s.segments_hit, s.segments_hit + s.segments_missed, one_line(r.text).c_str());
            (run == 0 ? t.ttft_first_ms : t.ttft_repeat_ms) += s.ttft_ms;
            (run == 0 ? t.first_runs : t.repeat_runs) += 1;
            t.prefilled += s.prefill_tokens;
            t.reused += s.reused_tokens;
            t.hits += s.segments_hit;
            t.misses += s.segments_missed;
        }
    }
    return t;
}

void print_totals(const std::vector<std::pair<std::string, ModeTotals>>& totals) {
    std::printf("\n%-11s %18s %20s %12s %12s %10s\n", "mode", "TTFT first run", "TTFT shuffled runs", "prefilled",
                "reused", "doc hits");
    for (const auto& [name, t] : totals) {
        std::printf("%-11s %15.1f ms %17.1f ms %12lld %12lld %9.0f%%\n", name.c_str(),
                    t.ttft_first_ms / std::max(1, t.first_runs), t.ttft_repeat_ms / std::max(1, t.repeat_runs),
                    (long long)t.prefilled, (long long)t.reused,
                    t.hits + t.misses > 0 ? 100.0 * t.hits / double(t.hits + t.misses) : 0.0);
    }
}

}  // namespace

int run_rag_demo(const RagDemoOptions& o) {
    auto questions = bench::read_qa_file(o.data_path, o.num_questions);
    if (!questions.ok()) return fail(questions.status());
    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    auto lm = engine::load_model(path, o.common.device, o.common.num_threads);
    if (!lm.ok()) return fail(lm.status());
    auto chat = tokenizer::select_chat_template("", lm->model->gguf());
    if (!chat.ok()) return fail(chat.status());
    std::vector<std::pair<std::string, ModeTotals>> totals;
    for (const auto& mode_name : o.modes) {
        auto mode = engine::parse_cache_mode(mode_name);
        if (!mode.ok()) return fail(mode.status(), 2);
        std::printf("\n=== cache mode: %s\n", mode_name.c_str());
        auto t = run_mode(o, *lm, *chat, *mode, *questions);
        if (!t.ok()) return fail(t.status());
        totals.emplace_back(mode_name, *t);
    }
    print_totals(totals);
    return 0;
}

namespace {

CLI::App* add_rag_demo_command(CLI::App& parent, RagDemoOptions& o) {
    CLI::App* d = parent.add_subcommand("demo", "RAG demo: 2WikiMultihopQA questions, documents shuffled between runs");
    add_common_options(d, o.common);
    d->add_option("--data", o.data_path, "JSONL file of questions with documents");
    d->add_option("--questions", o.num_questions, "questions to ask")->check(CLI::Range(1, 1000));
    d->add_option("--runs", o.runs, "runs per question (documents shuffled after the first)")
        ->check(CLI::Range(1, 100));
    d->add_option("--modes", o.modes, "cache modes to compare")->check(cache_mode_check());
    resolve_data_file_after_parse(d, o.data_path, "--data");
    return d;
}

}  // namespace

std::unique_ptr<Command> rag_demo_command() { return make_command<RagDemoOptions>(add_rag_demo_command, run_rag_demo); }

}  // namespace lazyattn::cli
