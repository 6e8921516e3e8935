// `lazyattn bench quality`: answer accuracy per variant (cache mode + document reuse settings)
// on hundreds of questions: synthetic multi-document tasks generated from a seed
// (bench/quality_tasks.h; the families held out from training in bench/heldout_tasks.h) and the
// 2WikiMultihopQA sample. Every variant answers the same questions (greedy decoding), so variants
// are compared question by question. This file asks the questions (or reads them back from a
// --resume progress file, bench_quality_progress.h); the tables and JSON made of the answers are
// bench_quality_report.h's (bench/plot_quality.py draws them).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "bench/heldout_tasks.h"
#include "bench/quality_tasks.h"
#include "cli/bench_quality_progress.h"
#include "cli/bench_quality_report.h"
#include "cli/cli_options.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/data_files.h"
#include "cli/model_path.h"
#include "core/timer.h"
#include "engine/loading/block_finetune.h"
#include "engine/loading/loaded_model.h"
#include "engine/request/quality_preset.h"
#include "engine/request/rag_prompt.h"
#include "engine/sync_engine.h"

namespace lazyattn::cli {
namespace {

using Variant = engine::ReuseVariant;

// Whether a variant of the engine `key` reads conditioned copies only where they exist
// (neighbours=K@ready: --quality balanced, accurate).
template <typename KeyOf, typename Key>
bool takes_ready_copies(const std::vector<Variant>& variants, const KeyOf& key_of, const Key& key) {
    return std::any_of(variants.begin(), variants.end(),
                       [&](const Variant& v) { return key_of(v) == key && v.reuse.neighbours_when_ready; });
}

// A window's warm-up for the presets that read conditioned copies where they exist (--quality
// balanced, accurate): each question asked once (one token) with `ready`'s reuse, then the
// background work run to its end, so the measured pass reads the copies a long-running server
// has made for documents it has seen. Asked again while sightings were refused (a tenant queues
// at most 16 copies: a question of 20 documents needs a second sighting), as a recurring stream
// would. Done window by window, just before the window's measured pass: a copy made then is
// still in the pool when it is read (a warm-up pass over every question first would have the
// first questions' copies evicted by the last ones'), and a resumed run warms exactly what it asks.
Status warm_up(engine::SyncEngine& eng, const Variant& ready, const std::vector<engine::RagRequest>& requests) {
    for (int round = 0; round < 4; ++round) {
        const int64_t refused = eng.scheduler().stats().background.refused;
        for (engine::RagRequest req : requests) {
            req.reuse = ready.reuse;
            req.max_tokens = 1;
            if (auto r = eng.run(req); !r.ok()) return r.status();
            eng.run_background();
        }
        if (eng.scheduler().stats().background.refused == refused) break;
    }
    return {};
}

// One line on stderr per window: answers done of all, this run's rate and the time left at it
// (a resumed run counts only what it asked itself). Questions come in order of family and k,
// so the time left is the words still to read at this run's seconds per word read, not the
// answers left at its seconds per answer (the first questions are the shortest).
class RunProgress {
public:
    RunProgress(int64_t total, int64_t done, double words_left)
        : total_(total), done_(done), words_left_(words_left), start_ms_(now_ms()) {}
    // `answers` more answered, of questions of `words` words in all.
    void add(int64_t answers, double words) {
        done_ += answers, here_ += answers;
        words_left_ -= words, words_here_ += words;
    }
    void show() const {
        const double spent_s = (now_ms() - start_ms_) / 1000;
        const double per_word = words_here_ > 0 ? spent_s / words_here_ : 0;
        std::fprintf(
            stderr, "answered %lld/%lld (%.1f%%), %lld this run in %.0f s (%.1f s per answer), about %.1f h left\n",
            (long long)done_, (long long)total_, 100.0 * double(done_) / double(std::max<int64_t>(1, total_)),
            (long long)here_, spent_s, here_ > 0 ? spent_s / double(here_) : 0.0, per_word * words_left_ / 3600);
        std::fflush(stderr);
    }

private:
    int64_t total_, done_, here_ = 0;
    double words_left_, words_here_ = 0;
    double start_ms_;
};

// What a question costs to answer, roughly: the words of its prompt.
double prompt_words(const bench::QualityTask& t) {
    double words = 1;
    const auto count = [&](const std::string& s) { words += double(std::count(s.begin(), s.end(), ' ')) + 1; };
    count(t.question);
    for (const auto& d : t.documents) count(d.text);
    return words;
}

// Every variant answers every question. Questions go in windows of `concurrency`; within a
// window, all variants of one cache mode run together on that mode's engine, so variants that
// read the same document encoding (plain or anchored) share one computation of it: the cost of
// a variant beyond its mode is its own tail and recomputed rows. With a progress file, each
// (window, engine) batch is appended to it when it ends, and a batch found there whole is not
// asked again (one with an answer missing, cut mid-write, is asked again whole, so its variants
// run together as in an uncut run; the answers recorded first stay).
Status run_variants(engine::LoadedModel& lm, const std::optional<tokenizer::ChatTemplate>& chat,
                    const std::vector<Variant>& variants, const std::vector<bench::QualityTask>& tasks,
                    const BenchQualityOptions& o, QualityProgress* progress,
                    std::map<std::string, std::vector<QualityAnswer>>& answers) {
    // One engine per (cache mode, KV types): variants of one mode and types share documents.
    using EngineKey = std::tuple<engine::CacheMode, kernels::KvDtype, kernels::KvDtype>;
    const auto key_of = [&o](const Variant& v) {
        const kernels::KvTypes t = v.kv_types.value_or(o.common.kv_types);
        return EngineKey{v.mode, t.k, t.v};
    };
    std::map<EngineKey, std::unique_ptr<engine::SyncEngine>> engines;
    for (const Variant& v : variants) {
        const EngineKey key = key_of(v);
        if (engines.count(key)) continue;
        engine::EngineConfig ec = engine_config_for(o.common);  // --device, the store flags
        ec.kv_types = {std::get<1>(key), std::get<2>(key)};
        ec.cache_mode = v.mode;
        ec.kv_cache_mb = 1024;
        ec.check_integrity = false;
        ec.query_mass_layers = o.query_layers;
        // Presets that take conditioned copies where they exist get them made in the background;
        // the warm-up of each window is each document's sighting.
        if (takes_ready_copies(variants, key_of, key)) ec.condition_after = 1;
        LA_ASSIGN_OR_RETURN(engines[key], engine::SyncEngine::create(*lm.model, *lm.tokenizer, ec));
    }
    const auto request_for = [&](const bench::QualityTask& t) -> Expected<engine::RagRequest> {
        std::vector<std::string> docs;
        for (const auto& p : t.documents) docs.push_back(engine::format_document(p.title, p.text));
        engine::RagPromptText text{"Answer the question using the documents. Reply with a short answer only.", docs,
                                   t.question};
        LA_ASSIGN_OR_RETURN(auto req, engine::build_rag_request(*lm.tokenizer, chat, text));
        // The small model restates the question first ("The access code of ... is"; "The head
        // office of the company that X founded is").
        req.max_tokens = t.family == "agg" || t.family == "bridge" ? 48 : 32;
        return req;
    };
    const auto conditioned = [&](const EngineKey& key) {
        return std::any_of(variants.begin(), variants.end(),
                           [&](const Variant& v) { return key_of(v) == key && v.reuse.neighbours > 0; });
    };
    // Conditioned copies (neighbours=K) read their neighbours from the corpus indexed so far. With
    // the whole question set indexed first, as `precompute --neighbours K` indexes its corpus,
    // each copy's neighbours no longer depend on which questions (and variants) ran before it.
    if (o.neighbours_corpus == "all") {
        for (auto& [key, eng] : engines) {
            if (!conditioned(key)) continue;
            for (const auto& t : tasks) {
                LA_ASSIGN_OR_RETURN(auto req, request_for(t));
                eng->core().scheduler().index_documents(req.tenant, req.documents());
            }
        }
    }
    for (const Variant& v : variants) answers[v.name].assign(tasks.size(), {});
    int64_t done = 0;
    double words_left = 0;
    for (const Variant& v : variants) {
        for (size_t i = 0; i < tasks.size(); ++i) {
            const QualityAnswer* a = progress != nullptr ? progress->find(v.name, i) : nullptr;
            if (a != nullptr) answers[v.name][i] = *a, ++done;
            if (a == nullptr) words_left += prompt_words(tasks[i]);
        }
    }
    const int64_t total = int64_t(tasks.size() * variants.size());
    RunProgress shown(total, done, words_left);
    if (done > 0)
        std::fprintf(stderr, "resuming: %lld of %lld answers found in the progress file\n", (long long)done,
                     (long long)total);
    const size_t window = size_t(std::max(1, o.concurrency));
    for (size_t first = 0; first < tasks.size(); first += window) {
        const size_t last = std::min(tasks.size(), first + window);
        for (auto& [key, eng] : engines) {
            bool whole = progress != nullptr;
            for (size_t i = first; i < last && whole; ++i) {
                for (const Variant& v : variants) {
                    if (key_of(v) == key && progress->find(v.name, i) == nullptr) whole = false;
                }
            }
            std::vector<engine::RagRequest> requests;
            for (size_t i = first; i < last; ++i) {
                LA_ASSIGN_OR_RETURN(auto req, request_for(tasks[i]));
                requests.push_back(std::move(req));
            }
            if (whole) {
                // Answered already. Under --neighbours-corpus seen the corpus still grows by the
                // window's documents, as it did when they were asked.
                if (o.neighbours_corpus == "seen" && conditioned(key)) {
                    for (const auto& req : requests)
                        eng->core().scheduler().index_documents(req.tenant, req.documents());
                }
                continue;
            }
            const Variant* ready = nullptr;
            for (const Variant& v : variants) {
                if (key_of(v) == key && v.reuse.neighbours_when_ready) ready = &v;
            }
            if (ready != nullptr) LA_RETURN_IF_ERROR(warm_up(*eng, *ready, requests));
            engine::EngineCore& sched = eng->core();
            struct InFlight {
                const Variant* variant;
                size_t task;
                std::shared_ptr<engine::RequestHandle> handle;
            };
            std::vector<InFlight> in_flight;
            for (size_t i = first; i < last; ++i) {
                engine::RagRequest req = requests[i - first];
                for (const Variant& v : variants) {
                    if (key_of(v) != key) continue;
                    req.reuse = v.reuse;
                    LA_ASSIGN_OR_RETURN(auto h, sched.add(req));
                    in_flight.push_back({&v, i, std::move(h)});
                }
            }
            while (sched.step()) {
            }
            std::vector<std::tuple<std::string, size_t, QualityAnswer>> batch;
            for (auto& f : in_flight) {
                const engine::RagResult r = f.handle->wait();
                if (r.finish_reason == engine::FinishReason::kError) return r.status;
                if (progress != nullptr && progress->find(f.variant->name, f.task) != nullptr) continue;
                QualityAnswer a;
                a.reply = r.text;
                a.correct = bench::reply_is_correct(tasks[f.task], r.text);
                a.f1 = bench::reply_f1(tasks[f.task], r.text);
                a.prompt_tokens = r.stats.num_prompt_tokens;
                a.prefill_tokens = r.stats.prefill_tokens;
                a.recomputed_tokens = r.stats.recomputed_tokens;
                answers[f.variant->name][f.task] = a;
                batch.emplace_back(f.variant->name, f.task, std::move(a));
                shown.add(1, prompt_words(tasks[f.task]));
            }
            if (progress != nullptr) LA_RETURN_IF_ERROR(progress->append(batch));
        }
        shown.show();
    }
    for (auto& [key, eng] : engines) {
        if (!takes_ready_copies(variants, key_of, key)) continue;
        const engine::SchedulerStats st = eng->scheduler().stats();
        std::printf("steady state: %lld conditioned copies made in the background (%lld skipped, %lld refused)\n",
                    (long long)st.background.done, (long long)st.background.skipped, (long long)st.background.refused);
    }
    return {};
}

// A variant of --variants: MODE[:REUSE][@KV], or a preset with more reuse settings after it,
// "fast+damp=16:-2": lazy with the preset's document reuse and those parts added (a preset
// alone is --quality's variant of that name).
Expected<Variant> preset_variant(const std::string& spec) {
    const size_t plus = spec.find('+');
    const auto preset = engine::parse_quality_preset(spec.substr(0, plus));
    if (!preset) return engine::parse_reuse_variant(spec);
    std::string reuse = engine::preset_document_reuse(*preset).name();
    if (plus != std::string::npos) reuse = (reuse == "plain" ? "" : reuse + "+") + spec.substr(plus + 1);
    LA_ASSIGN_OR_RETURN(auto r, engine::parse_document_reuse(reuse));
    return Variant{spec, engine::CacheMode::kLazy, r, std::nullopt};
}

// The variants of --variants. The command's exit code: 0, or 2 for a bad spelling.
int parse_variants(const BenchQualityOptions& o, std::vector<Variant>* variants) {
    for (const auto& spec : o.variants) {
        auto v = preset_variant(spec);
        if (!v.ok()) {
            std::cerr << "error: variant '" << spec << "': " << v.status().to_string() << "\n";
            return 2;
        }
        variants->push_back(*v);
    }
    for (const auto& name : o.quality) {  // a preset is lazy with its document reuse, named by it
        const auto preset = engine::parse_quality_preset(name);
        if (!preset) {
            std::cerr << "error: --quality " << name << ": none of fast, balanced, accurate\n";
            return 2;
        }
        Variant v{name, engine::CacheMode::kLazy, engine::preset_document_reuse(*preset), std::nullopt};
        variants->push_back(v);
    }
    return 0;
}

// "MODE:default": serve's default for this model (balanced's reuse, read in its steady state
// like the preset, or a block fine-tuned model's own layout). The command's exit code: 0, or 1 for a model
// whose default cannot be read.
int resolve_model_defaults(const engine::LoadedModel& lm, std::vector<Variant>* variants) {
    for (Variant& v : *variants) {
        if (!v.model_default) continue;
        auto d = engine::model_serving_default(lm.model->gguf());
        if (!d.ok()) {
            std::cerr << "error: variant '" << v.name << "': " << d.status().to_string() << "\n";
            return 1;
        }
        v.reuse = d->reuse;
    }
    return 0;
}

// The questions: the synthetic suite, then (with --wiki) the QA file's own. The command's exit
// code: 0, 1 for an unreadable QA file, 2 for bad suite options.
int make_tasks(const BenchQualityOptions& o, bench::QualitySuiteOptions* so, std::vector<bench::QualityTask>* tasks,
               size_t* num_synthetic) {
    auto qa = bench::read_qa_file(o.data_path);
    if (!qa.ok() || qa->empty()) {
        std::cerr << "error: " << (qa.ok() ? "no questions in " + o.data_path : qa.status().to_string()) << "\n";
        return 1;
    }
    auto families_asked = bench::expand_families(o.families);
    if (!families_asked.ok()) {
        std::cerr << "error: " << families_asked.status().to_string() << "\n";
        return 2;
    }
    so->seed = o.seed;
    so->num_questions = o.num_questions;
    so->families = *families_asked;
    so->doc_counts = o.doc_counts;
    so->max_prompt_words = o.max_prompt_words;
    auto suite = bench::make_benchmark_suite(*so, *qa);
    if (!suite.ok()) {
        std::cerr << "error: " << suite.status().to_string() << "\n";
        return 2;
    }
    *tasks = std::move(suite).value();
    *num_synthetic = tasks->size();
    if (o.wiki) {
        for (auto& t : bench::qa_tasks(*qa)) tasks->push_back(std::move(t));
    }
    return 0;
}

// The arguments that decide which questions are asked and how they are answered, as a progress
// file's header records them (option name -> value): a file written with others is refused.
nlohmann::json progress_arguments(const BenchQualityOptions& o, const std::vector<Variant>& variants,
                                  const std::string& model_path) {
    nlohmann::json a;
    a["--model"] = model_path;
    a["--fp32"] = o.fp32;
    a["--kv-dtype"] =
        std::string(kernels::kv_dtype_name(o.common.kv_types.k)) + "," + kernels::kv_dtype_name(o.common.kv_types.v);
    a["--device"] = backend::device_name(o.common.device);
    a["--threads"] = o.common.num_threads;
    a["--kv-store"] = o.common.kv_stores;
    a["--data"] = o.data_path;
    a["--questions"] = o.num_questions;
    a["--seed"] = o.seed;
    a["--families"] = o.families;
    a["--doc-counts"] = o.doc_counts;
    a["--max-prompt-words"] = o.max_prompt_words;
    a["--no-wiki"] = !o.wiki;
    a["--concurrency"] = o.concurrency;
    a["--neighbours-corpus"] = o.neighbours_corpus;
    a["--query-layers"] = o.query_layers;
    for (const auto& v : variants) a["variants"].push_back(v.name);  // --variants then --quality, in order
    return a;
}

// --report-only: the tables and JSON of what the progress file holds, without the model.
int report_progress_file(const BenchQualityOptions& o, const bench::QualitySuiteOptions& so, const std::string& path,
                         QualityResults& r) {
    if (o.resume_path.empty()) {
        std::cerr << "error: --report-only reports the answers of --resume FILE; give it\n";
        return 2;
    }
    auto progress = QualityProgress::open(o.resume_path, progress_arguments(o, r.variants, path), r.tasks, o.seed,
                                          /*read_only=*/true);
    if (!progress.ok()) {
        std::cerr << "error: " << progress.status().to_string() << "\n";
        return progress.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
    }
    for (const auto& v : r.variants) {
        r.answers[v.name].assign(r.tasks.size(), {});
        for (size_t i = 0; i < r.tasks.size(); ++i) {
            if (const QualityAnswer* a = progress->find(v.name, i)) r.answers[v.name][i] = *a;
        }
    }
    nlohmann::json out;
    keep_answered_by_all(r, *progress, out);
    write_report(o, so, path, 0, r, out);
    return 0;
}

}  // namespace

int run_bench_quality(const BenchQualityOptions& o) {
    QualityResults r;
    if (int rc = parse_variants(o, &r.variants); rc != 0) return rc;
    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    bench::QualitySuiteOptions so;
    size_t num_synthetic = 0;
    if (int rc = make_tasks(o, &so, &r.tasks, &num_synthetic); rc != 0) return rc;
    std::printf("%zu questions (%zu synthetic + %zu from %s%s), %zu variants, model %s\n", r.tasks.size(),
                num_synthetic, r.tasks.size() - num_synthetic, o.data_path.c_str(),
                o.wiki ? "; --no-wiki leaves those out" : "", r.variants.size(), path.c_str());
    if (o.report_only) return report_progress_file(o, so, path, r);
    std::optional<QualityProgress> progress;
    if (!o.resume_path.empty()) {
        auto p = QualityProgress::open(o.resume_path, progress_arguments(o, r.variants, path), r.tasks, o.seed);
        if (!p.ok()) {
            std::cerr << "error: " << p.status().to_string() << "\n";
            return p.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
        }
        progress.emplace(std::move(p).value());
    }
    model::WeightOptions wo;
    wo.dequantize_all = o.fp32;
    auto lm = engine::load_model(path, o.common.device, o.common.num_threads, wo);
    if (!lm.ok()) {
        std::cerr << "error: " << lm.status().to_string() << "\n";
        return 1;
    }
    if (Status st = check_query_layers(o.query_layers, lm->model->config().num_layers); !st.ok()) {
        std::cerr << "error: " << st.message() << "\n";
        return 2;
    }
    if (int rc = resolve_model_defaults(*lm, &r.variants); rc != 0) return rc;
    auto tmpl = tokenizer::select_chat_template("", lm->model->gguf());
    if (!tmpl.ok()) {
        std::cerr << "error: " << tmpl.status().to_string() << "\n";
        return 1;
    }
    const std::optional<tokenizer::ChatTemplate> chat = *tmpl;

    const double t0 = now_ms();
    if (Status st = run_variants(*lm, chat, r.variants, r.tasks, o, progress ? &*progress : nullptr, r.answers);
        !st.ok()) {
        std::cerr << "error: " << st.to_string() << "\n";
        return 1;
    }
    nlohmann::json out;
    write_report(o, so, path, (now_ms() - t0) / 1000, r, out);
    return 0;
}

namespace {

CLI::App* add_bench_quality_command(CLI::App& parent, BenchQualityOptions& o) {
    CLI::App* bq = parent.add_subcommand(
        "quality", "answer accuracy per cache mode and document reuse setting, with confidence intervals");
    add_common_options(bq, o.common);
    bq->add_option("--data", o.data_path, "QA JSONL file (its questions, and filler prose for the tasks)");
    bq->add_option("--quality", o.quality,
                   "quality presets answered as variants named fast, balanced, accurate (serve --quality), each in "
                   "its steady state: each question is asked once first, so the background work makes its documents' "
                   "conditioned copies before the measured answer; --variants fast+damp=16:-2 adds settings "
                   "to a preset")
        ->check(CLI::IsMember({"fast", "balanced", "accurate"}));
    bq->add_option("--variants", o.variants,
                   "MODE[:REUSE][@KV], e.g. none lazy lazy:anchor lazy:anchor+bias=-1 lazy:recompute=15%@query "
                   "lazy@q8_0 lazy:default (REUSE: anchor, scale=X, bias=X, recompute=N or recompute=P% with "
                   "@SELECT (" +
                       engine::select_names() +
                       "), joined by +; or default: what serve does by default "
                       "with this model)");
    add_query_layers_option(bq, o.query_layers);
    bq->add_option("--questions", o.num_questions,
                   "synthetic questions (split over families x doc counts); the 2Wiki sample's questions are asked "
                   "in addition unless --no-wiki")
        ->check(CLI::Range(1, 100000));
    bq->add_option("--seed", o.seed, "seed of the synthetic questions");
    bq->add_option("--families", o.families,
                   "synthetic task families: kv hop agg (the generators the fine-tuning recipe has trained on), attr "
                   "bridge table (held out from any training: people's attributes, a fact bridging two documents, a "
                   "cell of a table; at most 24 documents per question), or the groups heldout (attr bridge table) "
                   "and all")
        ->check(CLI::IsMember(bench::family_choices()));
    bq->add_option("--doc-counts", o.doc_counts, "documents per synthetic question")->check(CLI::Range(2, 64));
    bq->add_option("--max-prompt-words", o.max_prompt_words, "cap on a synthetic prompt's documents, in words")
        ->check(CLI::Range(100, 100000));
    bq->add_flag("!--no-wiki", o.wiki, "leave out the 2Wiki sample's questions");
    bq->add_option("--concurrency", o.concurrency, "requests in flight")->check(CLI::Range(1, 256));
    bq->add_flag("--fp32", o.fp32, "dequantize all weights to fp32");
    bq->add_option("--neighbours-corpus", o.neighbours_corpus,
                   "documents that neighbours=K variants find neighbours among: all (every question's, indexed "
                   "first, as precompute --neighbours indexes its corpus; repeatable) or seen (those of the "
                   "questions asked so far, the serve-time rule)")
        ->check(CLI::IsMember({"all", "seen"}));
    bq->add_option("--json", o.json_path, "write results (and every reply) to this JSON file");
    bq->add_option("--resume", o.resume_path,
                   "progress file: each answer is appended to it as it comes (JSON lines, flushed), and a run "
                   "with the same arguments skips what it holds, so a cut run carries on where it stopped; a file "
                   "written with other arguments is refused");
    bq->add_flag("--report-only", o.report_only,
                 "ask nothing: the tables and --json of the answers in --resume FILE, over the questions every "
                 "variant has answered (a partial file's figures); the arguments must be the file's");
    resolve_data_file_after_parse(bq, o.data_path, "--data");
    return bq;
}

}  // namespace

std::unique_ptr<Command> bench_quality_command() {
    return make_command<BenchQualityOptions>(add_bench_quality_command, run_bench_quality);
}

}  // namespace lazyattn::cli
