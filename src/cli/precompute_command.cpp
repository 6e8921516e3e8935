#include "cli/precompute_command.h"
#include "cli/command.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/cli_options.h"
#include "cli/corpus.h"
#include "cli/model_path.h"
#include "cli/store_json.h"
#include "core/progress.h"
#include "core/timer.h"
#include "engine/loading/loaded_model.h"
#include "engine/request/rag_prompt.h"
#include "engine/serving_engine.h"
#include "server/api_keys.h"

namespace lazyattn::cli {
namespace {

int fail(const Status& st, int code = 1) {
    std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
    return code;
}

// The documents as segment tokens (engine::document_tokens: the rule requests, POST /v1/documents
// and Python tokenize by, so every one of them hits the entries).
std::vector<std::vector<int32_t>> segment_tokens(const std::vector<CorpusDocument>& docs,
                                                 const tokenizer::Tokenizer& tokenizer) {
    std::vector<std::vector<int32_t>> out;
    out.reserve(docs.size());
    for (const CorpusDocument& d : docs) out.push_back(engine::document_tokens(tokenizer, d.title, d.text));
    return out;
}

// The JSON summary on stdout, a line on stderr; the exit status (1 when an entry was not written).
int report(const PrecomputeOptions& o, size_t documents, const engine::PrecomputeReport& r, const store::StoreStats& st,
           double seconds) {
    int64_t written = 0, errors = 0;
    for (const auto& t : st.tiers) {
        written += t.writes;
        errors += t.errors;
    }
    nlohmann::json out = {
        {"documents", documents},     {"computed", r.computed}, {"already_present", r.stored},
        {"duplicates", r.duplicates}, {"too_long", r.too_long}, {"tokens_computed", r.tokens_computed},
        {"neighbours", o.neighbours}, {"seconds", seconds},     {"store", store_stats_json(st)}};
    std::printf("%s\n", out.dump().c_str());
    std::fprintf(stderr,
                 "precompute: %lld documents computed (%lld tokens, %.1f s), %lld already in the store, %lld "
                 "duplicates, %lld longer than the context; %lld entries written, %lld store errors\n",
                 (long long)r.computed, (long long)r.tokens_computed, seconds, (long long)r.stored,
                 (long long)r.duplicates, (long long)r.too_long, (long long)written, (long long)errors);
    if (o.neighbours > 0) {  // conditioned copies are keyed apart: a plain request never reads them
        std::fprintf(stderr,
                     "precompute: these copies are read by requests with document_reuse \"neighbours=%d\": start "
                     "the server with --document-reuse neighbours=%d to make that its default\n",
                     o.neighbours, o.neighbours);
    }
    return errors > 0 || st.writes_dropped > 0 ? 1 : 0;
}

}  // namespace

CLI::App* add_precompute_command(CLI::App& app, PrecomputeOptions& o) {
    CLI::App* pc = app.add_subcommand(
        "precompute",
        "compute every document of a corpus into the persistent KV store (--kv-store), skipping those present");
    add_common_options(pc, o.common);
    pc->add_option("--corpus", o.corpus_files,
                   "documents: .jsonl (data/'s format, or one {title, text} per line) or plain text (one document "
                   "per file); repeatable")
        ->required()
        ->allow_extra_args(false);
    pc->add_option("--api-key", o.api_key,
                   "compute for the clients presenting this API key (their tenant on a server with --api-key); "
                   "also LAZYATTN_ARG_API_KEY")
        ->envname("LAZYATTN_ARG_API_KEY");
    pc->add_option("--cache-salt", o.cache_salt, "compute for requests sending this cache_salt");
    pc->add_option("--cache-mode", o.cache_mode, "lazy (also serves block-attn) or lazy-k")
        ->check(cache_mode_check(/*segments_only=*/true));
    pc->add_option("--kv-cache-mb", o.kv_cache_mb, "the RAM pool the documents are computed in")
        ->check(CLI::Range(1, 1 << 20));
    pc->add_option("--max-batch-tokens", o.max_batch_tokens, "rows per forward step")->check(CLI::Range(1, 1 << 20));
    pc->add_option("--batch-docs", o.batch_docs, "documents computed together (one engine request)")
        ->check(CLI::Range(1, 4096));
    pc->add_option("--neighbours", o.neighbours,
                   "store each document's copy conditioned on its K most similar documents of the corpus (BM25 over "
                   "token ids), which requests with document_reuse \"neighbours=K\" read; 0: the plain copy")
        ->check(CLI::Range(0, engine::DocumentReuse::kMaxNeighbours));
    pc->add_option("--unreachable-tier", o.unreachable_tier,
                   "a --kv-store tier that does not answer at start-up: stop (exit before computing) or skip (fill "
                   "the others)")
        ->check(CLI::IsMember({"stop", "skip"}));
    return pc;
}

int run_precompute(const PrecomputeOptions& o) {
    if (o.common.kv_stores.empty()) return fail(invalid_argument("precompute needs --kv-store DIR|URL"), 2);
    auto mode = engine::parse_cache_mode(o.cache_mode);
    if (!mode.ok()) return fail(mode.status(), 2);
    auto docs = read_corpus_files(o.corpus_files);  // a bad corpus is refused before the model loads
    if (!docs.ok()) return fail(docs.status(), 2);
    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    if (path.empty()) return fail(no_model_found());
    auto lm = engine::load_model(path, o.common.device, o.common.num_threads);
    if (!lm.ok()) return fail(lm.status());
    engine::EngineConfig ec = engine_config_for(o.common);
    // The engine opens each tier once and asks it for one key: an unreachable one stops
    // precompute before anything is computed, or is left out (--unreachable-tier skip).
    ec.kv_store_unreachable =
        o.unreachable_tier == "skip" ? store::UnreachableTiers::kSkip : store::UnreachableTiers::kRefuse;
    ec.kv_cache_mb = o.kv_cache_mb;
    ec.max_batch_tokens = o.max_batch_tokens;
    ec.cache_mode = *mode;
    // Unbounded: a batch (whose KV fits the pool) is flushed before the next, and none is dropped.
    ec.kv_store_writer.max_pending_bytes = 0;
    auto engine = engine::ServingEngine::create(*lm->model, *lm->tokenizer, ec);
    if (!engine.ok() && engine.status().code() == StatusCode::kUnavailable && o.unreachable_tier == "stop") {
        return fail(unavailable(engine.status().message() +
                                "; precompute stops before computing (--unreachable-tier skip fills the other tiers)"));
    }
    if (!engine.ok()) return fail(engine.status(), 2);
    std::vector<std::vector<int32_t>> corpus = segment_tokens(*docs, *lm->tokenizer);
    const size_t num_documents = corpus.size();
    ProgressBar bar("precompute", int64_t(num_documents));
    engine::PrecomputeSettings settings;
    settings.neighbours = o.neighbours;
    settings.batch_docs = o.batch_docs;
    settings.skip_stored = true;
    settings.flush_store = true;  // written before the next batch (bounded queue, no drops)
    settings.progress = [&bar](int64_t done) { bar.update(done); };
    const double t0 = now_ms();
    auto done = (*engine)->precompute(server::ApiKeys::tenant_of(o.api_key, o.cache_salt), std::move(corpus), settings);
    if (!done.ok()) return fail(done.status());
    bar.update(int64_t(num_documents));
    bar.finish();
    return report(o, num_documents, *done, (*engine)->stats().store, (now_ms() - t0) / 1000.0);
}

std::unique_ptr<Command> precompute_command() {
    return make_command<PrecomputeOptions>(add_precompute_command, run_precompute);
}

}  // namespace lazyattn::cli
