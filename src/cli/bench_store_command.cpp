// `lazyattn bench store`: its options, the tiers measured (as given, or a fresh directory of its
// own), the table and the JSON; the measurement itself is bench/store_sources.
#include "cli/bench_store_command.h"
#include "cli/command.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "bench/rag_runner.h"
#include "bench/rag_stats.h"
#include "bench/store_sources.h"
#include "cli/cli_options.h"
#include "cli/data_files.h"
#include "cli/model_path.h"
#include "cli/store_json.h"
#include "engine/loading/loaded_model.h"
#include "engine/sync_engine.h"

namespace lazyattn::cli {
namespace {

int fail(const Status& st, int code = 1) {
    std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
    return code;
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

// The table: p50 with its bootstrap interval, p90, and how much faster than recomputing; the
// same rows as JSON.
nlohmann::json print_sources(const BenchStoreOptions& o, const std::string& model_path,
                             const std::vector<bench::StoreSource>& sources) {
    const double recompute_p50 = bench::percentile(sources.front().ttft_ms, 50);
    const double floor_p50 = bench::percentile(sources.back().ttft_ms, 50);
    std::printf("\n%d documents of %d tokens + %d question tokens per request, %d requests per source, model %s\n",
                o.docs_per_request, o.doc_tokens, o.tail_tokens, o.repetitions, model_path.c_str());
    std::printf("%-10s %10s %19s %10s %12s %10s  %s\n", "source", "TTFT p50", "95% CI", "p90", "vs recompute",
                "vs floor", "documents (store/RAM/computed)");
    nlohmann::json rows = nlohmann::json::array();
    for (const bench::StoreSource& s : sources) {
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
    auto sets = bench::make_store_document_sets(
        {o.docs_per_request, o.doc_tokens, o.tail_tokens, o.repetitions, o.data_path}, *lm->tokenizer);
    if (!sets.ok()) return fail(sets.status(), 2);

    engine::EngineConfig base = engine_config_for(o.common);  // the stores: per engine, below
    base.kv_cache_mb = o.kv_cache_mb;
    base.check_integrity = false;
    base.kv_store_writer.max_pending_bytes = 0;  // the writer engine queues every document, then flushes
    // Measuring a tier that does not answer would spend the whole run on time-outs: each engine
    // opens its tiers once and refuses one that does not answer.
    base.kv_store_unreachable = store::UnreachableTiers::kRefuse;
    const bench::StoreEngineMaker make_engine = [&](std::vector<std::string> stores) {
        engine::EngineConfig ec = base;
        ec.kv_stores = std::move(stores);
        return engine::SyncEngine::create(*lm->model, *lm->tokenizer, ec);
    };
    bool start_failed = false;
    if (Status st = bench::fill_store_tiers(*sets, tiers, make_engine, &start_failed); !st.ok()) {
        return fail(st, start_failed ? 2 : 1);
    }
    auto sources = bench::make_store_sources(tiers, make_engine);
    if (!sources.ok()) return fail(sources.status(), 2);
    if (Status st = bench::measure_store_sources(*sets, *sources); !st.ok()) return fail(st);
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
