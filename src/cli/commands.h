// The subcommands of the lazyattn binary: their options and run functions. Each command's file
// also registers its options (cli/command.h); the run functions return the process exit code
// (0 ok, 1 run-time error, 2 bad arguments).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/device.h"
#include "bench/rag_workload.h"
#include "engine/engine_config.h"
#include "engine/request/cache_mode.h"
#include "engine/request/sampling_params.h"
#include "server/known_documents.h"
#include "server/message_documents.h"
#include "server/reasoning_split.h"
#include "server/sampling_defaults.h"

#include <nlohmann/json_fwd.hpp>

namespace lazyattn::engine {
struct LoadedModel;
}

namespace lazyattn::cli {

struct CommonOptions {
    std::string model_path;
    int32_t num_threads = 0;  // 0: all hardware threads
    // --kv-dtype, --cache-type-k / -v: f32|f16|bf16|q8_0|q4_0; *_chosen: named (not 'auto').
    kernels::KvTypes kv_types = kernels::same_kv_types(kernels::KvDtype::kF16);
    bool k_dtype_chosen = false, v_dtype_chosen = false;
    backend::Device device = backend::Device::kCpu;  // --device cpu|cuda
    std::vector<std::string> kv_stores;              // --kv-store DIR|redis://HOST:PORT[/DB], in order
    store::TierOptions kv_store_tier;                // --kv-store-timeout-ms, --kv-store-max-mib
    store::WriterOptions kv_store_writer;            // --kv-store-max-pending-mib
    std::string log_level = "info";                  // trace | debug | info | warn | error | off
    std::string log_format = "text";                 // text | json
    // llama-server / vLLM flags given that do not apply here (cli/compat_flags.h): one warning each.
    std::vector<std::string> compat_warnings;
};

struct GenerateOptions {
    CommonOptions common;
    std::string prompt;
    bool chat = false;
    std::string system;
    std::string chat_template;  // "" = from the model file
    int32_t max_tokens = 128;
    engine::SamplingParams sampling;
    std::vector<std::string> stop;
    bool ignore_eos = false;
    bool json = false;
    int32_t kv_cache_mb = 512;
    std::vector<std::string> doc_files;  // documents read from files
    std::vector<std::string> doc_texts;  // documents given inline
    std::string cache_mode = "lazy";
    int32_t repeat = 1;         // runs of the same request in one process
    bool shuffle_docs = false;  // re-order the documents before every run after the first
};

// `lazyattn info`.
struct InfoOptions {
    CommonOptions common;
    std::string chat_template;  // as serve's --chat-template ("" = the model file's own)
};

struct BenchSpeedOptions {
    CommonOptions common;
    int32_t prompt_tokens = 512;
    int32_t gen_tokens = 128;
    int32_t reps = 1;
    bool json = false;
};

struct RagDemoOptions {
    CommonOptions common;
    std::string data_path = "data/2wiki_sample.jsonl";
    int32_t num_questions = 3;
    int32_t runs = 2;
    std::vector<std::string> modes{"lazy", "prefix"};
};

struct BenchRagOptions {
    CommonOptions common;
    bench::WorkloadConfig workload;
    std::vector<double> zipf{2.1};  // the main run uses the first
    // Empty: every cache mode, unless --quality asks for presets only.
    std::vector<std::string> modes;
    // --quality: a run per preset (engine/request/quality_preset.h) after the modes, labelled by it,
    // with its background work (--condition-after overrides the preset's; -1: the preset's).
    std::vector<std::string> quality;
    int32_t condition_after = -1;
    int32_t clients = 4;  // closed loop; workload.arrival_rate > 0 (--rate): open loop instead
    int32_t windows = 5;  // equal spans of time the measured stream is reported in (run_windows)
    // The KV budget (the whole pool, cached documents and in-flight requests together): in
    // documents' worth when kv_budget_docs > 0 (sized from the model's KV bytes per token), else
    // kv_cache_mb MiB.
    double kv_budget_docs = 0;
    int32_t kv_cache_mb = 1024;
    int32_t warmup_requests = 0;  // the stream's first requests: run, not measured
    int32_t max_batch_tokens = 512;
    int32_t max_prefill_while_decoding = engine::EngineConfig{}.max_prefill_while_decoding;
    bool floor = true;
    std::vector<double> budget_sweep_docs;  // KV budgets in documents; empty: skipped
    std::vector<double> skew_sweep;         // empty: skipped
    std::vector<double> rates;              // empty: skipped
    std::vector<int32_t> capacity_docs;     // empty: skipped
    std::vector<std::string> sweep_modes = engine::cache_mode_names();
    int32_t sweep_requests = 20;
    int32_t sweep_warmup_requests = -1;  // -1: as warmup_requests (capped below sweep_requests)
    std::string json_path;
    std::string export_workload_path;  // the request stream as JSON (for the llama.cpp peer)
};

struct BenchQualityOptions {
    CommonOptions common;
    std::string data_path = "data/2wiki_sample.jsonl";  // the 2Wiki questions, and the filler prose
    // "<cache mode>[:<document reuse>]", e.g. "lazy:anchor+bias=-1" (engine::parse_document_reuse).
    std::vector<std::string> variants{"none", "lazy", "lazy:anchor"};
    int32_t num_questions = 486;  // synthetic ones (plus the 2Wiki sample's)
    uint64_t seed = 1;
    std::vector<std::string> families{"kv", "hop", "agg"};
    std::vector<int32_t> doc_counts{2, 5, 10, 20};
    int32_t max_prompt_words = 1000;
    bool wiki = true;         // ask the 2Wiki sample's questions too
    int32_t concurrency = 4;  // requests in flight per variant
    bool fp32 = false;        // dequantize every weight (the variants then agree to float rounding)
    std::string json_path;
    std::vector<int32_t> query_layers;      // engine::EngineConfig::query_mass_layers (empty: every layer)
    std::string neighbours_corpus = "all";  // "all": every question's documents indexed first; "seen"
    // --quality: presets answered as variants named by them (fast, balanced, accurate), each in its
    // steady state: each window of questions is asked once first, so the background work makes
    // every conditioned copy it would on a recurring stream before the measured pass.
    std::vector<std::string> quality;
    // --resume FILE: every answer appended to FILE as it comes; what it holds already (a run with
    // the same arguments, cut) is not asked again. --report-only: only the tables of FILE's answers.
    std::string resume_path;
    bool report_only = false;
};

// `lazyattn tokenize`: token ids of a text (no weights loaded).
struct TokenizeOptions {
    CommonOptions common;
    std::string text;
    bool add_special = false;    // BOS/EOS as the model's metadata asks
    bool parse_special = false;  // special-token text becomes the special token
    bool pieces = false;         // print each token's text beside its id
    bool json = false;
};

// `lazyattn serve`: the OpenAI-compatible HTTP server (src/server).
struct ServeOptions {
    CommonOptions common;
    std::vector<int32_t> query_layers;  // engine::EngineConfig::query_mass_layers (empty: every layer)
    std::string host = "127.0.0.1";
    std::vector<std::string> more_hosts;  // --host a,b: listened on too
    int32_t port = 8080;                  // 0: any free port (printed on startup)
    std::string cache_mode = "lazy";
    int32_t kv_cache_mb = 512;
    int32_t kv_blocks = 0;  // exact pool size in blocks (0: from kv_cache_mb)
    int32_t block_size = 16;
    int32_t max_model_len = 0;               // 0: the model's context length
    std::string served_model_name;           // "" = the model file's name
    std::vector<std::string> model_aliases;  // the names beside the id (--served-model-name a,b,c: b and c)
    std::vector<std::string> model_tags;     // --tags (llama-server's): GET /v1/models' tags
    bool strict_model_name = false;          // 404 for a request naming another model (else answered)
    bool slots_endpoint = true;              // GET /slots answers (--no-slots: 501, as llama-server)
    std::optional<bool> metrics;             // --metrics / --no-metrics; unset: the dialect's default
    std::string api_dialect;                 // --api-dialect openai|llama-server; "": from --parallel
    int32_t max_batch_tokens = 512;
    int32_t max_prefill_while_decoding = engine::EngineConfig{}.max_prefill_while_decoding;
    int32_t max_num_seqs = 64;
    int32_t parallel = 0;  // --parallel N (llama-server's slots): N at once, each request bounded by ctx/N
    int32_t max_queue = 1024;
    int64_t max_body_bytes = 8 << 20;
    int32_t http_threads = 128;
    double shutdown_timeout_s = 10;
    std::string chat_template;            // "" = from the model file
    std::string chat_template_kwargs;     // --chat-template-kwargs: a JSON object ("" = none)
    std::optional<bool> enable_thinking;  // --reasoning on|off (--reasoning-budget 0: off); unset: auto
    server::ReasoningFormat reasoning_format = server::ReasoningFormat::kAuto;  // --reasoning-format
    bool verbose_replies = false;       // -v/--verbose: replies carry llama-server's __verbose object
    std::vector<std::string> api_keys;  // --api-key (repeatable, or comma-separated)
    std::string api_key_file;
    std::vector<std::string> open_endpoints = {"health"};  // reachable without a key
    int32_t max_tokens_cap = 4096;
    int32_t default_max_tokens = 0;     // --n-predict (0: the route's rule)
    server::SamplingDefaults sampling;  // --temp, --top-k, --top-p, --min-p, --repeat-penalty, --seed
    double header_timeout_s = 10;
    double request_timeout_s = 60;
    int32_t max_connections = 1024;
    int32_t max_connections_per_client = 128;
    double health_stall_s = 60;
    double stats_interval_s = 10;
    double max_pinned_fraction = 0.5;  // pinned documents' share of the KV pool at most
    int32_t pin_quota_blocks = 0;      // per tenant; 0 = only the global share
    // Requests' default (engine::parse_document_reuse); "" = the preset's (engine::model_serving_default
    // where --quality is not given either).
    std::string document_reuse;
    // --quality fast|balanced|accurate (engine/request/quality_preset.h): the default reuse when
    // --document-reuse is not given, and the background conditioned copies; "": the model's
    // default (balanced, or a block fine-tuned model's own layout under fast).
    std::string quality;
    int32_t condition_after = -1;  // --condition-after; -1: the preset's (2 for balanced, accurate)
    // Documents inside messages (server/message_documents.h; docs/api.md).
    std::string documents_from = "none";
    std::string document_delimiter;  // \n \t \r \\ understood; "regex:" for a PCRE2 pattern
    std::string documents_message = "auto";
    int32_t max_documents = server::kDefaultMaxDocuments;
    int64_t known_documents_max = server::KnownDocuments::Limits{}.max_documents;
    int64_t known_documents_max_bytes = server::KnownDocuments::Limits{}.max_bytes;
    // --known-documents: corpora (precompute --corpus's format) known from the start.
    std::vector<std::string> known_documents_files;
    bool check = false;  // --check: start up to the bound port, report, exit
};

int run_generate(const GenerateOptions& options);
int run_bench_quality(const BenchQualityOptions& options);
int run_bench_rag(const BenchRagOptions& options);
Status run_bench_rag_sweeps(const BenchRagOptions& options, engine::LoadedModel& model,
                            const engine::EngineConfig& base, nlohmann::json& out);
int run_rag_demo(const RagDemoOptions& options);
int run_bench_speed(const BenchSpeedOptions& options);
// chat_template: as serve's --chat-template ("" = the model file's own).
int run_info(const CommonOptions& options, const std::string& chat_template = "");
int run_tokenize(const TokenizeOptions& options);
int run_serve(const ServeOptions& options);

}  // namespace lazyattn::cli
