#include "cli/precompute_command.h"
#include "cli/command.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/cli_options.h"
#include "cli/model_path.h"
#include "cli/store_json.h"
#include "cli/store_probe.h"
#include "core/progress.h"
#include "core/timer.h"
#include "engine/loading/loaded_model.h"
#include "engine/request/rag_prompt.h"
#include "engine/sync_engine.h"
#include "server/api_keys.h"

namespace lazyattn::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status add_json_line(const nlohmann::json& j, std::vector<CorpusDocument>* out) {
    auto add = [out](const nlohmann::json& d) -> Status {
        if (!d.is_object() || !d.contains("text") || !d["text"].is_string()) {
            return invalid_argument("a document needs a \"text\" string");
        }
        const std::string title = d.contains("title") && d["title"].is_string() ? d["title"].get<std::string>() : "";
        out->push_back({title, d["text"].get<std::string>()});
        return {};
    };
    if (j.is_object() && j.contains("documents")) {
        if (!j["documents"].is_array()) return invalid_argument("\"documents\" must be an array");
        for (const auto& d : j["documents"]) LA_RETURN_IF_ERROR(add(d));
        return {};
    }
    return add(j);
}

int fail(const Status& st, int code = 1) {
    std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
    return code;
}

}  // namespace

Expected<std::vector<std::string>> read_corpus(const std::string& path) {
    LA_ASSIGN_OR_RETURN(const auto docs, read_corpus_documents(path));
    std::vector<std::string> out;
    for (const CorpusDocument& d : docs) out.push_back(engine::format_document(d.title, d.text));
    return out;
}

Expected<std::vector<CorpusDocument>> read_corpus_documents(const std::string& path, const CorpusReadLimits& limits) {
    std::error_code ec;
    if (limits.regular_files_only && !std::filesystem::is_regular_file(path, ec)) {
        return invalid_argument("'" + path + "' is not a regular file (a corpus is read whole at start-up)");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return not_found("cannot open corpus '" + path + "'");
    std::vector<CorpusDocument> docs;
    if (!ends_with(path, ".jsonl") && !ends_with(path, ".json")) {
        std::string text;
        if (limits.max_plain_bytes == 0) {
            std::stringstream ss;
            ss << in.rdbuf();
            text = std::move(ss).str();
        } else {
            text.resize(limits.max_plain_bytes + 1);  // one byte more tells a longer file
            in.read(text.data(), std::streamsize(text.size()));
            text.resize(size_t(in.gcount()));
            if (text.size() > limits.max_plain_bytes) return docs;  // too long to be a document here
        }
        if (!text.empty()) docs.push_back({"", std::move(text)});
        return docs;
    }
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const auto j = nlohmann::json::parse(line, nullptr, false);
        Status st = j.is_discarded() ? invalid_argument("not JSON") : add_json_line(j, &docs);
        if (!st.ok()) return invalid_argument(path + ":" + std::to_string(n) + ": " + st.message());
    }
    return docs;
}

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
    std::vector<std::string> texts;
    for (const std::string& f : o.corpus_files) {
        auto docs = read_corpus(f);
        if (!docs.ok()) return fail(docs.status(), 2);
        texts.insert(texts.end(), docs->begin(), docs->end());
    }
    std::vector<std::string> stores = o.common.kv_stores;
    for (const UnreachableTier& t : unreachable_store_tiers(o.common.kv_stores, o.common.kv_store_tier)) {
        if (o.unreachable_tier == "stop") {
            return fail(unavailable(describe(t) + "; precompute stops before computing (--unreachable-tier skip "
                                                  "fills the other tiers)"));
        }
        std::cerr << "warning: " << describe(t) << "; skipped (--unreachable-tier skip)\n";
        std::erase(stores, t.uri);
    }
    if (stores.empty()) return fail(unavailable("no --kv-store tier can be reached; nothing to fill"));
    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    if (path.empty()) return fail(not_found("no model found; run `make run` once or pass --model FILE"));
    auto lm = engine::load_model(path, o.common.device, o.common.num_threads);
    if (!lm.ok()) return fail(lm.status());
    engine::EngineConfig ec = engine_config_for(o.common);
    ec.kv_stores = stores;
    ec.kv_cache_mb = o.kv_cache_mb;
    ec.max_batch_tokens = o.max_batch_tokens;
    ec.cache_mode = *mode;
    // Unbounded: a batch (whose KV fits the pool) is flushed before the next, and none is dropped.
    ec.kv_store_writer.max_pending_bytes = 0;
    auto created = engine::SyncEngine::create(*lm->model, *lm->tokenizer, ec);
    if (!created.ok()) return fail(created.status(), 2);
    engine::SyncEngine& eng = **created;
    engine::Scheduler& sched = eng.scheduler();
    if (sched.segment_store() == nullptr) return fail(invalid_argument("no store opened"), 2);
    const int32_t max_tokens = sched.context_length() - 2;  // room for the one-token tail

    const std::string tenant = server::ApiKeys::tenant_of(o.api_key, o.cache_salt);
    const double t0 = now_ms();
    int64_t computed = 0, present = 0, too_long = 0, duplicate = 0, tokens_computed = 0;
    ProgressBar bar("precompute", int64_t(texts.size()));
    std::vector<std::vector<int32_t>> batch;
    std::set<std::string> seen;
    int64_t batch_tokens = 0;
    auto run_batch = [&]() -> Status {
        if (batch.empty()) return {};
        engine::RagRequest r;
        r.tenant = tenant;
        r.segments = std::move(batch);
        r.tail = {r.segments.front().front()};  // one token: the segments are the work
        r.max_tokens = 0;
        r.ignore_eos = true;
        r.reuse.neighbours = o.neighbours;
        LA_ASSIGN_OR_RETURN(auto result, eng.run(r));
        if (result.finish_reason == "error") return result.status;
        sched.segment_store()->flush();  // written before the next batch (bounded queue, no drops)
        batch.clear();
        batch_tokens = 0;
        return {};
    };
    std::vector<std::vector<int32_t>> corpus;
    corpus.reserve(texts.size());
    for (const std::string& text : texts) corpus.push_back(lm->tokenizer->encode(text, false, false));
    // Conditioned copies: every document's neighbours come from the whole corpus, indexed first.
    if (o.neighbours > 0) sched.index_documents(tenant, corpus);
    for (size_t i = 0; i < corpus.size(); ++i) {
        std::vector<int32_t> tokens = std::move(corpus[i]);
        bar.update(int64_t(i));
        if (tokens.empty()) continue;
        // A batch is one request: its documents, and the neighbours conditioned ones are encoded
        // after, fit one context.
        engine::DocumentReuse reuse;
        reuse.neighbours = o.neighbours;
        const int64_t cost = int64_t(tokens.size()) + reuse.max_conditioning_tokens(int64_t(tokens.size()));
        if (cost > max_tokens) {
            ++too_long;
            continue;
        }
        const std::string key = sched.store_key(tenant, tokens, o.neighbours);
        if (!seen.insert(key).second) {
            ++duplicate;
            continue;
        }
        if (sched.segment_store()->contains(key)) {
            ++present;
            continue;
        }
        if (batch_tokens + cost > max_tokens || int32_t(batch.size()) >= o.batch_docs) {
            if (Status st = run_batch(); !st.ok()) return fail(st);
        }
        batch_tokens += cost;
        tokens_computed += int64_t(tokens.size());
        ++computed;
        batch.push_back(std::move(tokens));
    }
    if (Status st = run_batch(); !st.ok()) return fail(st);
    bar.update(int64_t(texts.size()));
    bar.finish();
    const double seconds = (now_ms() - t0) / 1000.0;
    const store::StoreStats st = sched.segment_store()->stats();
    int64_t written = 0, errors = 0;
    for (const auto& t : st.tiers) {
        written += t.writes;
        errors += t.errors;
    }
    nlohmann::json out = {{"documents", texts.size()},  {"computed", computed}, {"already_present", present},
                          {"duplicates", duplicate},    {"too_long", too_long}, {"tokens_computed", tokens_computed},
                          {"neighbours", o.neighbours}, {"seconds", seconds},   {"store", store_stats_json(st)}};
    std::printf("%s\n", out.dump().c_str());
    std::fprintf(stderr,
                 "precompute: %lld documents computed (%lld tokens, %.1f s), %lld already in the store, %lld "
                 "duplicates, %lld longer than the context; %lld entries written, %lld store errors\n",
                 (long long)computed, (long long)tokens_computed, seconds, (long long)present, (long long)duplicate,
                 (long long)too_long, (long long)written, (long long)errors);
    if (o.neighbours > 0) {  // conditioned copies are keyed apart: a plain request never reads them
        std::fprintf(stderr,
                     "precompute: these copies are read by requests with document_reuse \"neighbours=%d\": start "
                     "the server with --document-reuse neighbours=%d to make that its default\n",
                     o.neighbours, o.neighbours);
    }
    return errors > 0 || st.writes_dropped > 0 ? 1 : 0;
}

std::unique_ptr<Command> precompute_command() {
    return make_command<PrecomputeOptions>(add_precompute_command, run_precompute);
}

}  // namespace lazyattn::cli
