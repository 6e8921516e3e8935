// `lazyattn serve`: loads the model, starts the ServingEngine and the HTTP server, then waits for
// SIGINT or SIGTERM (ShutdownSignals: taken from the first line; during start-up one stops it at
// once); on one, the server drains (new requests get 503, in-flight ones get --shutdown-timeout
// seconds, then are cancelled) and the process exits 0. --check stops
// right after start-up, so a command line can be tried without leaving a server behind.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <tuple>

#include "cli/cli_options.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/corpus.h"
#include "cli/help_format.h"
#include "cli/model_path.h"
#include "cli/shutdown_signals.h"
#include "core/log.h"
#include "engine/loading/block_finetune.h"
#include "engine/loading/loaded_model.h"
#include "engine/serving_engine.h"
#include "server/api_keys.h"
#include "server/http_server.h"
#include "server/serving_stack.h"
#include "tokenizer/chat_template_kwargs.h"

namespace lazyattn::cli {
namespace {

int fail(const Status& st, int code = 1) {
    std::cerr << "error: " << st.to_string() << "\n";
    return code;
}

Expected<engine::EngineConfig> engine_config(const ServeOptions& o) {
    engine::EngineConfig ec = engine_config_for(o.common);
    LA_ASSIGN_OR_RETURN(ec.cache_mode, engine::parse_cache_mode(o.cache_mode));
    ec.kv_cache_mb = o.kv_cache_mb;
    ec.kv_num_blocks = o.kv_blocks;
    ec.max_batch_tokens = o.max_batch_tokens;
    ec.max_prefill_while_decoding = o.max_prefill_while_decoding;
    ec.query_mass_layers = o.query_layers;
    ec.max_num_seqs = o.parallel > 0 ? o.parallel : o.max_num_seqs;
    ec.max_queue = o.max_queue;
    ec.block_size = o.block_size;
    ec.max_model_len = o.max_model_len;
    ec.max_pinned_fraction = o.max_pinned_fraction;
    ec.max_pinned_blocks_per_tenant = o.pin_quota_blocks;
    LA_RETURN_IF_ERROR(ec.validate());
    return ec;
}

// --known-documents: the corpora a store was filled from (precompute --corpus) are known to the
// tenant of keyless, saltless requests from the first request (titled documents are not indexed:
// their segments hold the title, which a flat prompt does not).
Status load_known_documents(const ServeOptions& o, server::KnownDocuments& known) {
    if (o.known_documents_files.empty()) return {};
    const std::string tenant = server::ApiKeys::tenant_of("", "");
    size_t num_untitled = 0;
    // Regular files only, and a plain file only as far as the index keeps a document (longer
    // ones are not indexed): /dev/zero or a FIFO named here must not fill memory or hang start-up.
    const CorpusReadLimits limits{true, known.limits().max_document_bytes};
    for (const std::string& f : o.known_documents_files) {
        LA_ASSIGN_OR_RETURN(const auto docs, read_corpus_documents(f, limits));
        for (const CorpusDocument& d : docs) {
            if (!d.title.empty()) continue;
            known.add(tenant, d.text);
            ++num_untitled;
        }
    }
    std::printf("lazyattn serve: %zu untitled documents of %zu --known-documents files read; %lld known\n",
                num_untitled, o.known_documents_files.size(), static_cast<long long>(known.num_documents()));
    return {};
}

Expected<server::ServerConfig> server_config(const ServeOptions& o, const std::string& model_path) {
    server::ServerConfig sc;
    sc.host = o.host;
    sc.more_hosts = o.more_hosts;
    sc.port = o.port;
    sc.limits.max_body_bytes = o.max_body_bytes;
    sc.limits.header_timeout_s = o.header_timeout_s;
    sc.limits.request_timeout_s = o.request_timeout_s;
    sc.limits.max_connections = o.max_connections;
    sc.limits.max_connections_per_client = o.max_connections_per_client;
    sc.num_http_threads = o.http_threads;
    sc.shutdown_timeout_s = o.shutdown_timeout_s;
    LA_ASSIGN_OR_RETURN(sc.chat_template_kwargs,
                        tokenizer::server_template_kwargs(o.chat_template_kwargs, o.enable_thinking));
    sc.reasoning_format = o.reasoning_format;
    sc.verbose_replies = o.verbose_replies;
    sc.model_id =
        o.served_model_name.empty() ? std::filesystem::path(model_path).filename().string() : o.served_model_name;
    sc.model_aliases = o.model_aliases;
    sc.model_tags = o.model_tags;
    sc.strict_model_name = o.strict_model_name;
    sc.system_fingerprint = system_fingerprint();
    sc.model_path = model_path;
    sc.slots_endpoint = o.slots_endpoint;
    // --api-dialect, or the command line's shape: one asking for llama-server's slots (--parallel,
    // -np) gets llama-server's answers where OpenAI's and llama-server's differ.
    sc.api_dialect = server::api_dialect(o.api_dialect, o.parallel > 0);
    // On by default (lazyattn's users scrape it, as vLLM's); llama-server's dialect serves it
    // only with --metrics, as llama-server does.
    sc.metrics_endpoint = o.metrics.value_or(sc.api_dialect == server::ApiDialect::kOpenAI);
    sc.default_max_tokens = o.default_max_tokens;
    sc.sampling_defaults = o.sampling;
    sc.api_keys = o.api_keys;
    if (!o.api_key_file.empty()) {
        LA_ASSIGN_OR_RETURN(auto keys, server::ApiKeys::read_file(o.api_key_file));
        sc.api_keys.insert(sc.api_keys.end(), keys.begin(), keys.end());
    }
    auto open = [&](const char* name) {
        return std::find(o.open_endpoints.begin(), o.open_endpoints.end(), name) != o.open_endpoints.end();
    };
    sc.health_needs_key = !open("health");
    sc.metrics_needs_key = !open("metrics");
    sc.max_tokens_cap = o.max_tokens_cap;
    if (!o.document_reuse.empty()) {  // checked here to stop before loading; not said: the model's (the stack's)
        auto reuse = engine::parse_document_reuse(o.document_reuse);
        if (!reuse.ok()) return invalid_argument("--document-reuse: " + reuse.status().message());
        sc.document_reuse = *reuse;
    }
    LA_ASSIGN_OR_RETURN(std::tie(sc.documents_from.source, sc.documents_from.known),
                        server::parse_documents_from_name(o.documents_from));
    sc.known_documents.max_documents = o.known_documents_max;
    sc.known_documents.max_bytes = o.known_documents_max_bytes;
    if (!o.document_delimiter.empty()) {
        auto delimiter = server::compile_command_line_delimiter(o.document_delimiter);
        if (!delimiter.ok()) return invalid_argument("--document-delimiter: " + delimiter.status().message());
        sc.documents_from.delimiter = *delimiter;
        if (sc.documents_from.source == server::DocumentsSource::kNone)
            sc.documents_from.source = server::DocumentsSource::kDelimiter;
    }
    {
        auto message = server::parse_documents_message(o.documents_message);
        if (!message.ok()) return invalid_argument("--documents-message: " + message.status().message());
        std::tie(sc.documents_from.message, sc.documents_from.index) = *message;
    }
    sc.max_documents = o.max_documents;
    sc.health_stall_s = o.health_stall_s;
    sc.stats_interval_s = o.stats_interval_s;
    LA_RETURN_IF_ERROR(sc.validate());
    return sc;
}

}  // namespace

// CLI11 skips an environment variable that is set but empty, so LAZYATTN_ARG_API_KEY='' would
// serve with no authentication and no word said: an authentication setting that yields no key
// stops the start-up however it is given (the command line's are refused by the parser).
Status check_key_environment() {
    for (const char* option : {"--api-key", "--api-key-file"}) {
        const std::string name = env_name_for(option);
        const char* value = std::getenv(name.c_str());
        if (value != nullptr && *value == '\0') {
            return invalid_argument(name + " is set but empty: give a key (" + option +
                                    "), or unset it to serve without authentication");
        }
    }
    return {};
}

int run_serve(const ServeOptions& o) {
    if (Status st = check_key_environment(); !st.ok()) return fail(st, 2);
    auto ec = engine_config(o);
    if (!ec.ok()) return fail(ec.status(), 2);
    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    if (path.empty()) return fail(no_model_found());
    auto sc = server_config(o, path);
    if (!sc.ok()) return fail(sc.status(), 2);

    // Taken from here on, before any thread starts: a signal during start-up stops it at once.
    ShutdownSignals signals;

    // The model, its chat template (--chat-template, else the file's), the default document reuse
    // and the engine: the start-up the Python LLM shares.
    server::ServingStackOptions stack_options;
    stack_options.model_path = path;
    stack_options.device = o.common.device;
    stack_options.num_threads = o.common.num_threads;
    stack_options.engine = *ec;
    stack_options.chat_template = o.chat_template;
    stack_options.document_reuse = o.document_reuse;
    stack_options.quality = o.quality;
    stack_options.condition_after = o.condition_after;
    auto stack = server::open_serving_stack(stack_options);
    if (!stack.ok()) {
        // A bad setting or a KV pool larger than memory is the command line's (2); a file the
        // loader cannot read, the model's (1).
        const StatusCode code = stack.status().code();
        return fail(stack.status(),
                    code == StatusCode::kInvalidArgument || code == StatusCode::kResourceExhausted ? 2 : 1);
    }
    if (Status st = check_query_layers(o.query_layers, stack->lm.model->config().num_layers); !st.ok()) {
        return fail(st, 2);
    }
    sc->document_reuse = stack->default_reuse;
    engine::ServingEngine& eng = *stack->engine;
    if (o.parallel > 0) {  // llama-server's slots: each request holds ctx / N tokens
        sc->request_context = eng.context_length() / o.parallel;
        if (sc->request_context < 2) {
            return fail(invalid_argument("--parallel " + std::to_string(o.parallel) + " leaves each request " +
                                         std::to_string(sc->request_context) + " tokens of the context length " +
                                         std::to_string(eng.context_length()) + " (--ctx-size / --parallel)"),
                        2);
        }
    }
    server::HttpServer http(*sc, eng, *stack->lm.tokenizer, stack->chat);
    if (Status st = load_known_documents(o, http.known_documents()); !st.ok()) return fail(st, 2);
    if (Status st = http.start(); !st.ok()) return fail(st);
    std::printf(
        "lazyattn serve: listening on http://%s:%d (model %s, cache mode %s, KV %s, %d blocks of %d tokens%s)\n",
        sc->host.c_str(), http.port(), sc->model_id.c_str(), o.cache_mode.c_str(),
        kernels::kv_types_name(o.common.kv_types).c_str(), int(eng.stats().blocks_total), ec->block_size,
        sc->api_keys.empty() ? "" : ", API keys required");
    for (const std::string& h : sc->more_hosts) {
        const std::string shown = h.find(':') != std::string::npos ? "[" + h + "]" : h;  // IPv6 in a URL
        std::printf("lazyattn serve: listening on http://%s:%d too\n", shown.c_str(), http.port());
    }
    std::printf("lazyattn serve: requests that do not say read documents with document_reuse %s%s\n",
                sc->document_reuse.name().c_str(),
                stack->reuse_is_models_default ? " (the model's fine-tuned layout: docs/finetune.md)" : "");
    if (stack->quality != engine::QualityPreset::kFast) {
        std::printf("lazyattn serve: --quality %s: conditioned copies made in the background after %d requests\n",
                    std::string(engine::quality_preset_name(stack->quality)).c_str(),
                    int(stack->engine->config().condition_after));
    }
    if (!sc->model_aliases.empty()) {
        std::string names;
        for (const std::string& a : sc->model_aliases) names += (names.empty() ? "" : ", ") + a;
        std::printf("lazyattn serve: the model id is %s; requests naming %s are answered too%s\n", sc->model_id.c_str(),
                    names.c_str(), sc->strict_model_name ? " (--strict-model-name)" : "");
    }
    if (o.parallel > 0) {
        std::printf(
            "lazyattn serve: --parallel %d: %d requests at once, each of at most %d tokens (context %d / %d, "
            "as llama-server's slots)\n",
            o.parallel, o.parallel, sc->request_context, eng.context_length(), o.parallel);
    }
    if (!sc->sampling_defaults.empty() || sc->default_max_tokens > 0) {
        std::string d = sc->sampling_defaults.describe();
        if (sc->default_max_tokens > 0)
            d += (d.empty() ? "" : ", ") + ("max_tokens " + std::to_string(sc->default_max_tokens));
        std::printf("lazyattn serve: requests that do not set them sample with %s\n", d.c_str());
    }
    if (sc->documents_from.enabled()) {
        std::printf("lazyattn serve: documents inside messages: %s\n", sc->documents_from.describe().c_str());
    }
    if (o.check) {
        std::printf("lazyattn serve --check: start-up ok (model loaded, KV pool allocated, port bound); exiting\n");
        std::fflush(stdout);
        http.drain();
        eng.shutdown(false);
        return 0;
    }
    std::fflush(stdout);

    signals.serving();
    const int sig = signals.wait();
    log::info("draining", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}, {"timeout_s", sc->shutdown_timeout_s}});
    http.drain();
    eng.shutdown(false);
    log::info("stopped");
    return 0;
}

std::unique_ptr<Command> serve_command() { return make_command<ServeOptions>(add_serve_command, run_serve); }

}  // namespace lazyattn::cli
