#include "cli/bench_store_command.h"
#include "cli/command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "bench/rag_runner.h"
#include "bench/rag_stats.h"
#include "bench/rag_workload.h"
#include "cli/cli_options.h"
#include "cli/data_files.h"
#include "cli/model_path.h"
#include "cli/store_json.h"
#include "core/progress.h"
#include "engine/loading/loaded_model.h"
#include "engine/sync_engine.h"

namespace lazyattn::cli {
namespace {

int fail(const Status& st, int code = 1) {
    std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
    return code;
}

// One source of a request's documents: an engine whose RAM pool (and store, if any) is in the
// state that makes its documents come from there.
struct Source {
    std::string name;    // "recompute", "ram", "disk", "redis", "floor"
    std::string detail;  // the tier's location, or how the source is made
    std::unique_ptr<engine::SyncEngine> engine;
    std::vector<double> ttft_ms;
    int64_t docs_from_store = 0, docs_from_ram = 0, docs_computed = 0;
};

// A request over documents `docs` (pool indices) in the given order.
engine::RagRequest request_over(const bench::Workload& w, const std::vector<int32_t>& docs,
                                const std::vector<int32_t>& tail) {
    engine::RagRequest r;
    for (int32_t d : docs) r.segments.push_back(w.docs[size_t(d)]);
    r.tail = tail;
    r.max_tokens = 1;  // TTFT is the whole request
    r.ignore_eos = true;
    return r;
}

}  // namespace

CLI::App* add_bench_store_command(CLI::App& parent, BenchStoreOptions& o) {
    CLI::App* bs = parent.add_subcommand(
        "store",
        "TTFT of a k-document request whose documents come from recompute, the RAM pool, each --kv-store "
        "tier (disk, Redis) and the all-cached floor, side by side");
    add_common_options(bs, o.common);
    bs->add_option("--k", o.docs_per_request, "documents per request")->check(CLI::Range(1, 64));
    bs->add_option("--doc-tokens", o.doc_tokens, "tokens per document")->check(CLI::Range(1, 1 << 20));
    bs->add_option("--tail-tokens", o.tail_tokens, "question tokens after the documents")->check(CLI::Range(1, 4096));
    bs->add_option("--repetitions", o.repetitions, "measured requests per source, each over fresh documents")
        ->check(CLI::Range(1, 10000));
    bs->add_option("--kv-cache-mb", o.kv_cache_mb, "each source's RAM pool, in MiB")->check(CLI::Range(1, 1 << 20));
    bs->add_option("--data", o.data_path, "QA file whose passages make up the documents");
    bs->add_option("--json", o.json_path, "write the results to this JSON file");
    resolve_data_file_after_parse(bs, o.data_path, "--data");
    return bs;
}

namespace {

// A directory of our own, removed when the command ends (when no --kv-store is given).
struct OwnTierDir {
    std::string dir;
    ~OwnTierDir() {
        std::error_code ec;
        if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    }
};

// The documents of each repetition (plus one warm-up set), distinct, and the two questions.
struct DocumentSets {
    bench::Workload workload;
    std::vector<int32_t> distinct;  // pool indices, docs_per_request per set
    int32_t docs_per_request = 0;
    std::vector<int32_t> warm_tail, tail;

    std::vector<int32_t> docs(int32_t set) const {
        return {distinct.begin() + set * docs_per_request, distinct.begin() + (set + 1) * docs_per_request};
    }
};

// Fresh documents per repetition (plus one warm-up set), so no source sees a set twice. The
// workload cuts documents from a few hundred passages, so some come out identical: three
// times the need is drawn and the distinct ones kept.
Expected<DocumentSets> make_document_sets(const BenchStoreOptions& o, const tokenizer::Tokenizer& tok) {
    const int32_t need = (o.repetitions + 1) * o.docs_per_request;
    bench::WorkloadConfig wc;
    wc.num_docs = 3 * need;
    wc.doc_tokens = o.doc_tokens;
    wc.docs_per_request = o.docs_per_request;
    wc.tail_tokens = o.tail_tokens;
    wc.num_requests = 2;
    wc.zipf_s = 0;
    wc.passages_path = o.data_path;
    LA_ASSIGN_OR_RETURN(bench::Workload w, bench::make_workload(wc, tok));
    DocumentSets sets;
    sets.docs_per_request = o.docs_per_request;
    std::set<std::vector<int32_t>> seen;
    for (int32_t d = 0; d < wc.num_docs && int32_t(sets.distinct.size()) < need; ++d) {
        if (seen.insert(w.docs[size_t(d)]).second) sets.distinct.push_back(d);
    }
    if (int32_t(sets.distinct.size()) < need) {
        return invalid_argument("the passages give only " + std::to_string(sets.distinct.size()) +
                                " distinct documents of this length; fewer --repetitions or a larger --data");
    }
    // Measured requests ask another question than the warm-up ones, so the question is computed
    // in every source (cached tails would make the floor a different request).
    sets.warm_tail = w.requests[0].tail;
    sets.tail = w.requests[1].tail;
    if (sets.tail == sets.warm_tail) std::reverse(sets.tail.begin(), sets.tail.end());
    sets.workload = std::move(w);
    return sets;
}

using EngineMaker = std::function<Expected<std::unique_ptr<engine::SyncEngine>>(std::vector<std::string>)>;

// Every document into every tier first, by a writer engine of its own (flushed, then gone).
// *start_failed: the writer engine did not start (the command's exit code is then 2, not 1;
// a tier that does not answer is 1).
Status fill_tiers(const DocumentSets& sets, int32_t num_sets, const std::vector<std::string>& tiers,
                  const EngineMaker& make_engine, bool* start_failed) {
    auto writer = make_engine(tiers);
    if (!writer.ok()) {
        *start_failed = writer.status().code() != StatusCode::kUnavailable;
        return writer.status();
    }
    ProgressBar bar("bench store: filling the tiers", num_sets);
    for (int32_t set = 0; set < num_sets; ++set) {
        LA_RETURN_IF_ERROR((*writer)->run(request_over(sets.workload, sets.docs(set), sets.tail)).status());
        bar.update(set + 1);
    }
    bar.finish();
    store::SegmentStore* st = (*writer)->core().kv_store().store();
    if (st == nullptr) return invalid_argument("no store opened");
    st->flush();
    for (const store::TierStats& t : st->stats().tiers) {
        if (t.errors > 0) {
            return unavailable("the " + t.name + " tier " + t.where + " failed while being filled (" +
                               std::to_string(t.errors) + " errors)");
        }
    }
    return {};
}

// The sources side by side: recompute, each tier, the RAM pool, the all-cached floor (last).
Expected<std::vector<Source>> make_sources(const std::vector<std::string>& tiers, const EngineMaker& make_engine) {
    std::vector<Source> sources;
    auto add_source = [&](std::string name, std::string detail, std::vector<std::string> stores) -> Status {
        LA_ASSIGN_OR_RETURN(auto e, make_engine(std::move(stores)));
        sources.push_back({std::move(name), std::move(detail), std::move(e), {}, 0, 0, 0});
        return {};
    };
    LA_RETURN_IF_ERROR(add_source("recompute", "prefilled from scratch", {}));
    for (const std::string& t : tiers) {
        const std::string kind = t.rfind("redis://", 0) == 0 ? "redis" : "disk";
        LA_RETURN_IF_ERROR(add_source(kind, t, {t}));
    }
    LA_RETURN_IF_ERROR(add_source("ram", "cached by an earlier request, asked in another order", {}));
    LA_RETURN_IF_ERROR(add_source("floor", "cached by a request with the same documents in the same order", {}));
    return sources;
}

// Interleaved: repetition by repetition, every source in turn (drift hits all alike). Set 0
// warms every engine up and is not measured.
Status measure(const DocumentSets& sets, int32_t num_sets, std::vector<Source>& sources) {
    ProgressBar bar("bench store", int64_t(num_sets) * int64_t(sources.size()));
    int64_t done = 0;
    for (int32_t set = 0; set < num_sets; ++set) {
        const std::vector<int32_t> docs = sets.docs(set);
        std::vector<int32_t> reversed(docs.rbegin(), docs.rend());
        for (Source& s : sources) {
            if (s.name == "ram" || s.name == "floor") {  // cache the documents first, unmeasured
                auto warm =
                    s.engine->run(request_over(sets.workload, s.name == "ram" ? docs : reversed, sets.warm_tail));
                if (!warm.ok()) return warm.status();
            }
            auto r = s.engine->run(request_over(sets.workload, reversed, sets.tail));
            if (!r.ok()) return r.status();
            if (r->finish_reason == engine::FinishReason::kError) return r->status;
            bar.update(++done);
            if (set == 0) continue;
            s.ttft_ms.push_back(r->stats.ttft_ms);
            s.docs_from_store += r->stats.segments_from_store;
            s.docs_from_ram += r->stats.segments_hit - r->stats.segments_from_store;
            s.docs_computed += r->stats.segments_missed;
        }
    }
    bar.finish();
    return {};
}

// The table: p50 with its bootstrap interval, p90, and how much faster than recomputing; the
// same rows as JSON.
nlohmann::json print_sources(const BenchStoreOptions& o, const std::string& model_path,
                             const std::vector<Source>& sources) {
    const double recompute_p50 = bench::percentile(sources.front().ttft_ms, 50);
    const double floor_p50 = bench::percentile(sources.back().ttft_ms, 50);
    std::printf("\n%d documents of %d tokens + %d question tokens per request, %d requests per source, model %s\n",
                o.docs_per_request, o.doc_tokens, o.tail_tokens, o.repetitions, model_path.c_str());
    std::printf("%-10s %10s %19s %10s %12s %10s  %s\n", "source", "TTFT p50", "95% CI", "p90", "vs recompute",
                "vs floor", "documents (store/RAM/computed)");
    nlohmann::json rows = nlohmann::json::array();
    for (const Source& s : sources) {
        const double p50 = bench::percentile(s.ttft_ms, 50), p90 = bench::percentile(s.ttft_ms, 90);
        const bench::Interval ci = bench::bootstrap_percentile_ci(s.ttft_ms, 50);
        const double speedup = p50 > 0 ? recompute_p50 / p50 : 0, over_floor = floor_p50 > 0 ? p50 / floor_p50 : 0;
        std::printf("%-10s %8.1f ms  [%6.1f, %6.1f] ms %8.1f ms %11.2fx %9.2fx  %lld/%lld/%lld\n", s.name.c_str(), p50,
                    ci.low, ci.high, p90, speedup, over_floor, (long long)s.docs_from_store, (long long)s.docs_from_ram,
                    (long long)s.docs_computed);
        rows.push_back({{"source", s.name},
                        {"detail", s.detail},
                        {"ttft_ms", s.ttft_ms},
                        {"ttft_p50_ms", p50},
                        {"ttft_p50_ci_ms", {ci.low, ci.high}},
                        {"ttft_p90_ms", p90},
                        {"speedup_vs_recompute", speedup},
                        {"ratio_to_floor", over_floor},
                        {"docs_from_store", s.docs_from_store},
                        {"docs_from_ram", s.docs_from_ram},
                        {"docs_computed", s.docs_computed},
                        {"store", s.engine->core().kv_store().store() != nullptr
                                      ? store_stats_json(s.engine->core().kv_store().store()->stats())
                                      : nlohmann::json::array()}});
    }
    std::printf(
        "(vs recompute: recompute's p50 over this source's, > 1 is faster; vs floor: this source's p50 over "
        "the all-cached floor's; disk reads go through the OS page cache)\n");
    return rows;
}

}  // namespace

int run_bench_store(const BenchStoreOptions& o) {
    namespace fs = std::filesystem;
    // The tiers measured: as given, or a fresh directory of our own (removed at the end).
    std::vector<std::string> tiers = o.common.kv_stores;
    OwnTierDir own;
    if (tiers.empty()) {
        own.dir = (fs::temp_directory_path() / ("lazyattn-bench-store-" + std::to_string(getpid()))).string();
        fs::remove_all(own.dir);
        tiers.push_back(own.dir);
    }
    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    if (path.empty()) return fail(no_model_found());
    auto lm = engine::load_model(path, o.common.device, o.common.num_threads);
    if (!lm.ok()) return fail(lm.status());
    auto sets = make_document_sets(o, *lm->tokenizer);
    if (!sets.ok()) return fail(sets.status(), 2);
    const int32_t num_sets = o.repetitions + 1;

    engine::EngineConfig base = engine_config_for(o.common);  // the stores: per engine, below
    base.kv_cache_mb = o.kv_cache_mb;
    base.check_integrity = false;
    base.kv_store_writer.max_pending_bytes = 0;  // the writer engine queues every document, then flushes
    // Measuring a tier that does not answer would spend the whole run on time-outs: each engine
    // opens its tiers once and refuses one that does not answer.
    base.kv_store_unreachable = store::UnreachableTiers::kRefuse;
    const EngineMaker make_engine = [&](std::vector<std::string> stores) {
        engine::EngineConfig ec = base;
        ec.kv_stores = std::move(stores);
        return engine::SyncEngine::create(*lm->model, *lm->tokenizer, ec);
    };
    bool start_failed = false;
    if (Status st = fill_tiers(*sets, num_sets, tiers, make_engine, &start_failed); !st.ok()) {
        return fail(st, start_failed ? 2 : 1);
    }
    auto sources = make_sources(tiers, make_engine);
    if (!sources.ok()) return fail(sources.status(), 2);
    if (Status st = measure(*sets, num_sets, *sources); !st.ok()) return fail(st);
    const nlohmann::json rows = print_sources(o, path, *sources);
    if (!o.json_path.empty()) {
        nlohmann::json out = {{"model", path},
                              {"docs_per_request", o.docs_per_request},
                              {"doc_tokens", o.doc_tokens},
                              {"tail_tokens", o.tail_tokens},
                              {"repetitions", o.repetitions},
                              {"kv_dtype", kernels::kv_types_name(o.common.kv_types)},
                              {"threads", lm->backend->num_threads()},
                              {"sources", rows}};
        std::ofstream f(o.json_path);
        f << out.dump(2) << "\n";
        if (!f) return fail(io_error("cannot write " + o.json_path));
    }
    return 0;
}

std::unique_ptr<Command> bench_store_command() {
    return make_command<BenchStoreOptions>(add_bench_store_command, run_bench_store);
}

}  // namespace lazyattn::cli
