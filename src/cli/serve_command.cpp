// `lazyattn serve`: loads the model, starts the ServingEngine and the HTTP server, then waits for
// SIGINT or SIGTERM. Both signals are blocked in every thread and taken here with sigwait(), so no
// handler runs in an arbitrary thread; on one, the server drains (new requests get 503, in-flight
// ones get --shutdown-timeout seconds, then are cancelled) and the process exits 0.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/model_path.h"
#include "engine/loaded_model.h"
#include "engine/serving_engine.h"
#include "server/http_server.h"

namespace lazyattn::cli {
namespace {

int fail(const Status& st, int code = 1) {
    std::cerr << "error: " << st.to_string() << "\n";
    return code;
}

Expected<engine::EngineConfig> engine_config(const ServeOptions& o) {
    engine::EngineConfig ec;
    ec.kv_dtype = o.common.kv_dtype;
    LA_ASSIGN_OR_RETURN(ec.cache_mode, engine::parse_cache_mode(o.cache_mode));
    ec.kv_cache_mb = o.kv_cache_mb;
    ec.kv_num_blocks = o.kv_blocks;
    ec.max_batch_tokens = o.max_batch_tokens;
    ec.max_num_seqs = o.max_num_seqs;
    ec.max_queue = o.max_queue;
    LA_RETURN_IF_ERROR(ec.validate());
    return ec;
}

// The template named on the command line, else the model's, else none (chat requests get 400).
Expected<std::optional<tokenizer::ChatTemplate>> chat_template(const ServeOptions& o, const loader::GgufFile& gguf) {
    tokenizer::ChatTemplate tmpl;
    if (!o.chat_template.empty()) {
        LA_ASSIGN_OR_RETURN(tmpl.kind, tokenizer::chat_template_from_name(o.chat_template));
        return std::optional<tokenizer::ChatTemplate>(tmpl);
    }
    auto jinja = gguf.get_string("tokenizer.chat_template");
    if (!jinja.ok()) return std::optional<tokenizer::ChatTemplate>();
    LA_ASSIGN_OR_RETURN(tmpl, tokenizer::chat_template_from_jinja(*jinja));
    return std::optional<tokenizer::ChatTemplate>(tmpl);
}

sigset_t shutdown_signals() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

}  // namespace

int run_serve(const ServeOptions& o) {
    auto ec = engine_config(o);
    if (!ec.ok()) return fail(ec.status(), 2);
    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    if (path.empty()) return fail(not_found("no model found; run `make run` once or pass --model FILE"));
    server::ServerConfig sc;
    sc.host = o.host;
    sc.port = o.port;
    sc.max_body_bytes = o.max_body_bytes;
    sc.num_http_threads = o.http_threads;
    sc.shutdown_timeout_s = o.shutdown_timeout_s;
    sc.model_id = std::filesystem::path(path).filename().string();
    if (Status st = sc.validate(); !st.ok()) return fail(st, 2);

    // Blocked before any thread starts, so every thread inherits the mask and sigwait() below
    // is the only taker.
    const sigset_t signals = shutdown_signals();
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    auto lm = engine::load_model(path, o.common.num_threads);
    if (!lm.ok()) return fail(lm.status());
    auto chat = chat_template(o, lm->model->gguf());
    if (!chat.ok()) return fail(chat.status());
    engine::ServingEngine eng(*lm->model, *lm->tokenizer, *ec);
    server::HttpServer http(sc, eng, *lm->tokenizer, *chat, lm->model->config().context_length);
    if (Status st = http.start(); !st.ok()) return fail(st);
    std::printf("lazyattn serve: listening on http://%s:%d (model %s, cache mode %s, KV %s, %d blocks of %d tokens)\n",
                sc.host.c_str(), http.port(), sc.model_id.c_str(), o.cache_mode.c_str(),
                engine::kv_dtype_name(o.common.kv_dtype), int(eng.stats().blocks_total), ec->block_size);
    std::fflush(stdout);

    int sig = 0;
    sigwait(&signals, &sig);
    std::fprintf(stderr, "lazyattn serve: %s, draining (up to %.0f s)\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
                 sc.shutdown_timeout_s);
    http.drain();
    eng.shutdown(false);
    std::fprintf(stderr, "lazyattn serve: stopped\n");
    return 0;
}

}  // namespace lazyattn::cli
