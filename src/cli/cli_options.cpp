#include "cli/cli_options.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <filesystem>
#include <iostream>
#include <map>

#include "cli/compat_flags.h"
#include "core/log.h"
#include "engine/request/cache_mode.h"
#include "engine/request/document_reuse.h"
#include "engine/request/quality_preset.h"
#include "server/api_dialect.h"
#include "server/api_keys.h"
#include "tokenizer/builtin_chat_templates.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/chat_template_kwargs.h"

namespace lazyattn::cli {
namespace {

// "a, b,,c" -> {"a", "b", "c"}: llama-server's comma-separated lists (--host, --alias, --tags).
std::vector<std::string> split_list(const std::string& value) {
    std::vector<std::string> out;
    for (size_t start = 0; start <= value.size();) {
        const size_t comma = std::min(value.find(',', start), value.size());
        const size_t first = value.find_first_not_of(" \t", start);
        const size_t last = value.find_last_not_of(" \t", comma == 0 ? 0 : comma - 1);
        if (first < comma && last != std::string::npos && last >= first)
            out.push_back(value.substr(first, last - first + 1));
        start = comma + 1;
    }
    return out;
}

// --device as lazyattn spells it (cpu, cuda) and as llama-server does (-dev none, CUDA0).
std::string device_spelling(std::string& value) {
    std::string lower;
    for (char c : value) lower += char(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "cpu" || lower == "none") {
        value = "cpu";
    } else if (lower == "cuda" || lower == "cuda0") {
        value = "cuda";
    } else if (lower.rfind("cuda", 0) == 0 && lower.find_first_not_of("0123456789", 4) == std::string::npos) {
        return "one device per process: --device cuda uses the first visible GPU; choose it with "
               "CUDA_VISIBLE_DEVICES=" +
               lower.substr(4);
    } else {
        return "'" + value + "' is neither cpu nor cuda (llama-server's none and CUDA0 are understood)";
    }
    return {};
}

}  // namespace

void add_common_options(CLI::App* cmd, CommonOptions& o, bool with_kv) {
    cmd->add_option("-m,--model", o.model_path, "GGUF model file (default: the embedded SmolLM2-135M)");
    cmd->add_option("-t,--threads", o.num_threads, "worker threads (0 = all cores)")->check(CLI::NonNegativeNumber);
    cmd->add_option("--log-level", o.log_level, "log lines on stderr at or above: trace|debug|info|warn|error|off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
    cmd->add_option("--log-format", o.log_format, "log line format: text | json (one object per line)")
        ->check(CLI::IsMember({"text", "json"}));
    if (!with_kv) return;
    // Parsed as strings so help and errors name the values. --kv-dtype sets keys and values,
    // llama.cpp's --cache-type-k / -v (-ctk / -ctv) one each; "auto" (vLLM's default spelling)
    // leaves the device's default.
    const auto kv_option = [&o, cmd](const char* names, bool keys, bool values, const char* help) {
        cmd->add_option_function<std::string>(
               names,
               [&o, keys, values](const std::string& v) {
                   const Expected<kernels::KvDtype> t = parse_kv_dtype_option(v);
                   if (!t.ok()) throw CLI::ValidationError(t.status().message());
                   const bool chosen = v != "auto";
                   if (keys) o.kv_types.k = t.value(), o.k_dtype_chosen = chosen;
                   if (values) o.kv_types.v = t.value(), o.v_dtype_chosen = chosen;
               },
               help)
            ->type_name("f16|bf16|f32|q8_0|q4_0");
    };
    kv_option("--kv-dtype,--kv-cache-dtype", true, true,
              "KV cache element type of keys and values: f16 (default on the CPU), bf16 (default on CUDA, whose "
              "kernels read bf16), f32, q8_0 (8-bit, 1.9x the documents of f16 per MiB), q4_0 (4-bit, 3.6x); "
              "'auto' picks the device's default");
    kv_option("--cache-type-k", true, false, "element type of the cached keys alone (llama.cpp's -ctk)");
    kv_option("--cache-type-v", false, true, "element type of the cached values alone (llama.cpp's -ctv)");
    cmd->add_option_function<std::string>(
           "--device", [&o](const std::string& v) { o.device = backend::parse_device(v).value(); },
           "where to compute: cpu (default) or cuda (refused with the reason where this build or machine has no "
           "CUDA); llama-server's -dev none and CUDA0 are cpu and cuda")
        ->transform(CLI::Validator(device_spelling, "cpu|cuda"))
        ->type_name("cpu|cuda");
    // The KV type follows the device unless one was named: once both flags are read.
    cmd->parse_complete_callback([&o] {
        if (o.device != backend::Device::kCuda) return;
        if (!o.k_dtype_chosen) o.kv_types.k = kernels::KvDtype::kBF16;
        if (!o.v_dtype_chosen) o.kv_types.v = kernels::KvDtype::kBF16;
    });
    cmd->add_option(
           "--kv-store", o.kv_stores,
           "persistent document KV store below the RAM pool: a directory or redis://[[USER]:PASSWORD@]HOST:PORT[/DB] "
           "(a Redis Cluster: any node, or several as HOST:PORT,HOST:PORT; detected); repeat for several tiers, "
           "looked up in the order given (disk before Redis)")
        ->allow_extra_args(false)
        ->type_name("DIR|URL");
    cmd->add_option("--kv-store-timeout-ms", o.kv_store_tier.read_timeout_ms,
                    "a store read that takes longer is a miss and marks the tier down for a growing back-off "
                    "(network tiers; the inference thread waits this long at most)")
        ->check(CLI::Range(1.0, 60000.0))
        ->capture_default_str();
    cmd->add_option_function<double>(
           "--kv-store-max-mib", [&o](double mib) { o.kv_store_tier.max_bytes = int64_t(mib * 1048576.0); },
           "the most MiB each store tier holds; past it the least recently used entries are evicted (0: unbounded)")
        ->check(CLI::Range(0.0, 1e9))
        ->default_str(std::to_string(o.kv_store_tier.max_bytes >> 20));
    cmd->add_option_function<double>(
           "--kv-store-max-pending-mib",
           [&o](double mib) { o.kv_store_writer.max_pending_bytes = int64_t(mib * 1048576.0); },
           "the most MiB of KV copies waiting for the store's writer (a slower tier drops writes past it, counted; "
           "a document whose entry is larger is never stored; 0: unbounded)")
        ->check(CLI::Range(0.0, 1e9))
        ->default_str(std::to_string(o.kv_store_writer.max_pending_bytes >> 20));
}

CLI::Validator cache_mode_check(bool segments_only) { return CLI::IsMember(engine::cache_mode_names(segments_only)); }

std::string cache_mode_help() { return engine::cache_mode_choices(); }

void add_query_layers_option(CLI::App* cmd, std::vector<int32_t>& layers) {
    cmd->add_option("--query-layers", layers,
                    "layers whose attention scores document tokens for recompute=P%@query (comma-separated, from "
                    "0); default: every layer")
        ->delimiter(',')
        ->check(CLI::NonNegativeNumber);
}

Status check_query_layers(const std::vector<int32_t>& layers, int32_t num_layers) {
    for (const int32_t l : layers) {
        if (l < 0 || l >= num_layers) {
            return invalid_argument("--query-layers: layer " + std::to_string(l) + " is not in the model's 0.." +
                                    std::to_string(num_layers - 1));
        }
    }
    return {};
}

engine::EngineConfig engine_config_for(const CommonOptions& o) {
    engine::EngineConfig ec;
    ec.kv_types = o.kv_types;
    ec.device = o.device;
    ec.kv_stores = o.kv_stores;
    ec.kv_store_tier = o.kv_store_tier;
    ec.kv_store_writer = o.kv_store_writer;
    return ec;
}

void configure_logging(const CommonOptions& o) {
    log::configure(log::parse_level(o.log_level).value(),
                   o.log_format == "json" ? log::Format::kJson : log::Format::kText);
}

std::string env_name_for(const std::string& long_name) {
    std::string out = "LAZYATTN_ARG_";
    for (char c : long_name.substr(long_name.find_first_not_of('-'))) {
        out += c == '-' ? '_' : char(std::toupper(static_cast<unsigned char>(c)));
    }
    return out;
}

namespace {

// Integer ranges rather than CLI::PositiveNumber, whose error prints the range up to DBL_MAX.
const auto positive = CLI::Range(1, INT32_MAX), non_negative = CLI::Range(0, INT32_MAX);
const auto seconds = CLI::Range(0.001, 1e9);

// Where serve listens and the model id clients name.
void add_serve_network_options(CLI::App* sv, ServeOptions& o) {
    // llama-server's --host takes a comma-separated list, or a UNIX socket path ending in .sock.
    sv->add_option_function<std::string>(
          "--host",
          [&o](const std::string& value) {
              const std::vector<std::string> hosts = split_list(value);
              if (hosts.empty()) throw CLI::ValidationError("--host: no address given");
              for (const std::string& h : hosts) {
                  if (h.size() > 5 && h.compare(h.size() - 5, 5, ".sock") == 0) {
                      throw CLI::ValidationError("--host " + h +
                                                 " (llama-server) is not supported here: no UNIX sockets; listen on "
                                                 "TCP with --host ADDRESS --port N");
                  }
              }
              o.host = hosts.front();
              o.more_hosts.assign(hosts.begin() + 1, hosts.end());
          },
          "address to listen on; a comma-separated list listens on each (one port)")
        ->default_str(o.host)
        ->type_name("ADDRESS");
    sv->add_option("--port", o.port, "port to listen on (0 = any free port)")->check(CLI::Range(0, 65535));
    // Several names, comma-separated, as each tool reads them: vLLM's --served-model-name takes the
    // first as the id; llama-server's --alias keeps them in a sorted set, so its id is the first in
    // sorted order. Either way every name is answered and GET /v1/models lists them.
    sv->add_option_function<std::string>(
          "--served-model-name",
          [&o](const std::string& value) {
              const std::vector<std::string> names = split_list(value);
              if (names.empty()) throw CLI::ValidationError("--served-model-name: no name given");
              o.served_model_name = names.front();
              o.model_aliases.assign(names.begin() + 1, names.end());
          },
          "the model id clients see and name (default: the file name); of a comma-separated list, the first is "
          "the id and the others are names requests may give under --strict-model-name too (vLLM)")
        ->type_name("NAME");
    sv->add_option_function<std::string>(
          "--alias,-a",
          [&o](const std::string& value) {
              std::vector<std::string> names = split_list(value);
              if (names.empty()) throw CLI::ValidationError("--alias: no name given");
              std::sort(names.begin(), names.end());
              names.erase(std::unique(names.begin(), names.end()), names.end());
              o.served_model_name = names.front();
              o.model_aliases.assign(names.begin() + 1, names.end());
          },
          "llama-server's model names, comma-separated: every one is answered and listed in /v1/models' "
          "aliases; the id is the first in sorted order, as llama-server's")
        ->type_name("NAME[,NAME...]");
    sv->add_option_function<std::string>(
          "--tags", [&o](const std::string& value) { o.model_tags = split_list(value); },
          "llama-server's model tags, comma-separated: listed in GET /v1/models' `tags`")
        ->type_name("TAG[,TAG...]");
    sv->add_flag("--strict-model-name", o.strict_model_name,
                 "answer 404 to a request naming another model (vLLM); by default it is answered by this "
                 "model, as llama-server does");
}

// The engine's capacity: context, KV pool, batch, queue, HTTP workers; and the chat template.
void add_serve_engine_options(CLI::App* sv, ServeOptions& o) {
    sv->add_option("-c,--ctx-size,--max-model-len", o.max_model_len,
                   "cap the context length below the model's (0 = the model's)")
        ->check(non_negative);
    sv->add_option("--cache-mode", o.cache_mode, cache_mode_help())->check(cache_mode_check());
    sv->add_option("--kv-cache-mb", o.kv_cache_mb, "KV cache pool size in MiB")->check(positive);
    sv->add_option("--kv-blocks", o.kv_blocks, "exact KV pool size in blocks (overrides --kv-cache-mb)")
        ->check(non_negative);
    sv->add_option("--block-size", o.block_size, "tokens per KV block")->check(CLI::Range(1, 1024));
    sv->add_option("-b,--max-batch-tokens,--max-num-batched-tokens,--batch-size", o.max_batch_tokens,
                   "rows per forward step")
        ->check(positive);
    sv->add_option("--max-prefill-while-decoding", o.max_prefill_while_decoding,
                   "prefill rows a step may carry while requests decode, bounding their time per output token "
                   "(0: up to --max-batch-tokens)")
        ->check(non_negative);
    auto* seqs = sv->add_option("--max-num-seqs", o.max_num_seqs,
                                "requests running at once, each bounded by the whole context (vLLM)")
                     ->check(positive);
    sv->add_option("--parallel", o.parallel,
                   "llama-server's slots (-np N): N requests at once, each bounded by --ctx-size / N tokens, "
                   "prompt and generation (the KV pool stays shared); a llama-server command line, it gets "
                   "llama-server's dialect unless --api-dialect says (/metrics then needs --metrics)")
        ->check(positive)
        ->excludes(seqs);
    sv->add_option("--max-queue", o.max_queue, "waiting requests before 429")->check(positive);
    sv->add_option("--max-body-bytes", o.max_body_bytes, "largest request body (413 above)")->check(positive);
    sv->add_option("--http-threads,--threads-http", o.http_threads,
                   "HTTP worker threads for generations (one per open stream)")
        ->check(CLI::Range(1, 4096));
    sv->add_option("--shutdown-timeout", o.shutdown_timeout_s, "seconds in-flight requests get on SIGTERM")
        ->check(CLI::Range(0.0, 1e9));
    // A built-in name (llama-server's list), a template's text or a file is taken as it is (the
    // template is compiled when the model loads). Any other value is the template's text, as
    // llama-server reads it, with a warning saying so; unless it looks like a path: a mistyped
    // file name must not become a template that prints the name.
    sv->add_option_function<std::string>(
          "--chat-template,--chat-template-file",
          [&o](const std::string& value) {
              std::error_code ec;
              if (!tokenizer::is_builtin_or_inline_chat_template(value) && !std::filesystem::exists(value, ec)) {
                  if (tokenizer::looks_like_template_path(value)) {
                      throw CLI::ValidationError("--chat-template " + value +
                                                 ": no such file (nor a template's text or a built-in name: " +
                                                 tokenizer::builtin_chat_template_names() + ")");
                  }
                  o.common.compat_warnings.push_back(
                      "--chat-template '" + value +
                      "' is neither a built-in name nor a file: taken as the template's text, as llama-server does "
                      "(built-in names: " +
                      tokenizer::builtin_chat_template_names() + ")");
              }
              o.chat_template = value;
          },
          "chat template: a built-in name (chatml, llama3, command-r, gemma, mistral-v7, ...: llama-server's "
          "list), the template's text, or a .jinja file (default: the model file's own)")
        ->type_name("TEMPLATE");
}

// Chat template variables and thinking models (llama-server's flags).
void add_serve_reasoning_options(CLI::App* sv, ServeOptions& o) {
    sv->add_option("--chat-template-kwargs", o.chat_template_kwargs,
                   "chat template variables every request renders with, a JSON object (e.g. "
                   "'{\"enable_thinking\": false}'); a request's chat_template_kwargs override them")
        ->check([](const std::string& v) {
            auto kwargs = tokenizer::server_template_kwargs(v, std::nullopt);
            return kwargs.ok() ? std::string() : kwargs.status().message();
        })
        ->type_name("JSON");
    sv->add_option_function<std::string>(
          "--reasoning",
          [&o](const std::string& v) {
              if (v == "on" || v == "true" || v == "1" || v == "enabled") {
                  o.enable_thinking = true;
              } else if (v == "off" || v == "false" || v == "0" || v == "disabled") {
                  o.enable_thinking = false;
              } else if (v == "auto") {
                  o.enable_thinking.reset();
              } else {
                  throw CLI::ValidationError("--reasoning", "expected on, off or auto, not '" + v + "'");
              }
          },
          "thinking in the chat template: on | off set its enable_thinking variable; auto (default) leaves the "
          "template's own choice")
        ->type_name("on|off|auto");
    sv->add_option_function<std::string>(
          "--reasoning-format",
          [&o](const std::string& v) {
              auto format = server::reasoning_format_from_name(v);
              if (!format) {
                  throw CLI::ValidationError(
                      "--reasoning-format",
                      "expected one of " + std::string(server::reasoning_format_names()) + ", not '" + v + "'");
              }
              o.reasoning_format = *format;
          },
          "a chat reply's <think> section: none (left in the content), deepseek or auto (default: in "
          "reasoning_content), deepseek-legacy (both)")
        ->type_name("FORMAT");
    sv->add_option_function<int32_t>(
          "--reasoning-budget",
          [&o](int32_t n) {
              if (n < -1) throw CLI::ValidationError("--reasoning-budget", "-1 (unrestricted), 0 (no thinking) or N");
              if (n == 0) o.enable_thinking = false;
              if (n > 0) {
                  o.common.compat_warnings.push_back(
                      "--reasoning-budget " + std::to_string(n) +
                      ": thinking has no budget of its own here; max_tokens bounds the whole reply (0 turns "
                      "thinking off)");
              }
          },
          "-1: unrestricted (default); 0: no thinking (enable_thinking false); N > 0 is accepted with a warning: "
          "max_tokens bounds the whole reply")
        ->type_name("N");
}

// API keys and the endpoints open without one.
void add_serve_auth_options(CLI::App* sv, ServeOptions& o) {
    // Split here, not by CLI11's delimiter: a value that splits to nothing (",") must be refused,
    // not make the parser take the next word as the key. Each --api-key takes exactly one word.
    sv->add_option_function<std::vector<std::string>>(
          "--api-key",
          [&o](const std::vector<std::string>& values) {
              for (const std::string& v : values) {
                  auto keys = server::ApiKeys::parse_key_list(v);
                  if (!keys.ok()) throw CLI::ValidationError("--api-key", keys.status().message());
                  o.api_keys.insert(o.api_keys.end(), keys->begin(), keys->end());
              }
          },
          "require this API key (Bearer or X-Api-Key); repeat or comma-separate for several")
        ->allow_extra_args(false)
        ->type_name("KEY[,KEY...]");
    sv->add_option("--api-key-file", o.api_key_file, "file with one API key per line")->check(CLI::ExistingFile);
    sv->add_option("--open-endpoints", o.open_endpoints,
                   "with API keys: GET endpoints reachable without one (health, metrics; 'none' for neither)")
        ->delimiter(',')
        ->check(CLI::IsMember({"health", "metrics", "none"}));
    sv->add_flag("--slots,!--no-slots", o.slots_endpoint,
                 "GET /slots lists the engine's slots (default; --no-slots: it answers 501, as llama-server)");
    sv->add_flag_function(
        "--metrics,!--no-metrics", [&o](int64_t n) { o.metrics = n > 0; },
        "GET /metrics serves Prometheus text (--no-metrics: 501). Default: on; in llama-server's dialect "
        "(--api-dialect), off unless --metrics, as llama-server's");
    sv->add_option("--api-dialect", o.api_dialect,
                   "where OpenAI's API and llama-server's disagree, which to follow: /metrics' default, a "
                   "Responses stream stopped by max_output_tokens (openai: response.incomplete; llama-server: "
                   "response.completed). Default: llama-server with --parallel/-np (a llama-server command "
                   "line), else openai")
        ->check(CLI::IsMember({server::kApiDialectOpenAI, server::kApiDialectLlamaServer}));
}

// How requests carry documents and read their cached KV.
void add_serve_document_options(CLI::App* sv, ServeOptions& o) {
    sv->add_option(
        "--document-reuse", o.document_reuse,
        "how requests that do not say read cached documents: plain, or anchor, neighbours=K (the "
        "copies of precompute --neighbours K), scale=X, bias=X, recompute=N or recompute=P%[@SELECT] (SELECT: " +
            engine::select_names() +
            ") joined by + (docs/api.md); "
            "default: the --quality preset's (balanced: neighbours=1@ready+damp=16:-2), or a block fine-tuned "
            "model's own layout (anchor or plain) under fast or no preset");
    sv->add_option("--quality", o.quality,
                   "fast, balanced or accurate: how requests that do not say read documents (--document-reuse, and a "
                   "request's document_reuse, win), and whether conditioned copies are made in the background; "
                   "default: balanced (fast with the model's own layout for a block fine-tuned model). " +
                       engine::quality_preset_help())
        ->check(CLI::IsMember({"fast", "balanced", "accurate"}));
    sv->add_option("--condition-after", o.condition_after,
                   "make a document's neighbour-conditioned copy in the background once requests of a tenant that "
                   "accept it (document_reuse neighbours=K@ready) read it plain this many times; 0: never; "
                   "default: 2 with --quality balanced (the default) or accurate, 0 with fast")
        ->check(CLI::Range(0, 1 << 20));
    add_query_layers_option(sv, o.query_layers);
    sv->add_option("--documents-from", o.documents_from,
                   "where requests find documents inside their messages: none, parts (a message's text parts), "
                   "delimiter (its text cut at --document-delimiter), known (the documents this server has seen, "
                   "found in the text), parts+known, delimiter+known; docs/api.md")
        ->check(CLI::IsMember({"none", "parts", "delimiter", "known", "parts+known", "delimiter+known"}));
    sv->add_option("--known-documents-max", o.known_documents_max,
                   "most documents the known-document index keeps, over every tenant")
        ->check(positive);
    sv->add_option("--known-documents", o.known_documents_files,
                   "corpus files (precompute --corpus's format: .jsonl of {\"text\", \"title\"}, or one document a "
                   "file) whose untitled documents documents_from known finds from the first request (the tenant "
                   "of keyless, saltless requests)")
        ->check(CLI::ExistingFile);
    sv->add_option("--known-documents-max-bytes", o.known_documents_max_bytes,
                   "most bytes of text the known-document index keeps, over every tenant")
        ->check(CLI::PositiveNumber);
    sv->add_option("--document-delimiter", o.document_delimiter,
                   "the text between documents inside a message (\\n \\t understood), or regex:PATTERN; "
                   "implies --documents-from delimiter");
    sv->add_option("--documents-message", o.documents_message,
                   "which message holds them: auto (the last user message, else the system message), last_user, "
                   "system, or an index");
    sv->add_option("--max-documents", o.max_documents, "most documents one request may carry")->check(positive);
}

// What requests that do not set a sampling field or max_tokens get (llama-server's flags); a
// request's own field wins.
void add_serve_sampling_options(CLI::App* sv, ServeOptions& o) {
    auto optional_number = [sv](const std::string& names, std::optional<double>& into, const std::string& help) {
        sv->add_option_function<double>(
              names, [&into](double v) { into = v; }, help)
            ->type_name("X");
    };
    sv->add_option_function<double>(
          "--temp,--temperature", [&o](double v) { o.sampling.temperature = std::max(0.0, v); },
          "temperature of requests that set none (llama-server's; a negative value is 0, greedy)")
        ->type_name("X");
    sv->add_option_function<int64_t>(
          "--top-k", [&o](int64_t v) { o.sampling.top_k = std::max<int64_t>(0, v); },
          "top_k of requests that set none (0: off)")
        ->type_name("N");
    optional_number("--top-p", o.sampling.top_p, "top_p of requests that set none");
    optional_number("--min-p", o.sampling.min_p, "min_p of requests that set none");
    optional_number("--repeat-penalty", o.sampling.repeat_penalty,
                    "repetition penalty of requests that set none (1: off)");
    sv->add_option_function<int64_t>(
          "--seed,-s",
          [&o](int64_t v) {
              if (v == -1 || v == int64_t(0xFFFFFFFF)) {
                  o.sampling.seed.reset();  // llama-server's "random seed"
              } else if (v < 0) {
                  throw CLI::ValidationError("--seed", "a seed is >= 0 (or -1: a random seed per request)");
              } else {
                  o.sampling.seed = uint64_t(v);
              }
          },
          "the seed of every request that sets none, as llama-server's (equal requests then sample alike); "
          "-1 (default): a random seed per request")
        ->type_name("N");
    sv->add_option_function<int32_t>(
          "--n-predict,--predict,-n",
          [&o](int32_t v) {
              if (v < -2) throw CLI::ValidationError("--n-predict", "N >= 0, or -1 / -2 (until a stop or the context)");
              o.default_max_tokens = v < 0 ? 0 : v;
          },
          "max_tokens of requests that set none (llama-server's; -1: until a stop or the request's context); "
          "--max-tokens-cap still clamps")
        ->type_name("N");
}

// Per-request and per-client limits, timeouts, health and pins.
void add_serve_limit_options(CLI::App* sv, ServeOptions& o) {
    sv->add_option("--max-tokens-cap", o.max_tokens_cap, "most tokens one request may generate (clamped)")
        ->check(positive);
    sv->add_option("--header-timeout", o.header_timeout_s, "seconds a client has to send a request's headers")
        ->check(seconds);
    sv->add_option("--request-timeout,--timeout", o.request_timeout_s,
                   "seconds a client has to send a whole request (llama-server: -to)")
        ->check(seconds);
    sv->add_option("--max-connections", o.max_connections, "open connections in all (503 beyond)")->check(positive);
    sv->add_option("--max-connections-per-client", o.max_connections_per_client,
                   "open connections from one address (429 beyond)")
        ->check(positive);
    sv->add_option("--health-stall", o.health_stall_s,
                   "seconds of queued work without progress before /health answers 503")
        ->check(seconds);
    sv->add_option("--stats-interval", o.stats_interval_s, "seconds between stats log lines while busy")
        ->check(seconds);
    sv->add_option("--max-pinned-fraction", o.max_pinned_fraction,
                   "share of the KV pool pinned documents may hold in all (pins beyond it get 429)")
        ->check(CLI::Range(0.0, 1.0));
    sv->add_option("--pin-quota-blocks", o.pin_quota_blocks, "KV blocks one tenant may pin (0 = only the global share)")
        ->check(non_negative);
}

// vLLM's and llama-server's spellings of lazyattn options.
void add_serve_other_spellings(CLI::App* sv, ServeOptions& o) {
    // vLLM's `vllm serve MODEL` and its switch-off of prefix caching; llama-server's --log-disable.
    sv->add_option("model_file", o.common.model_path, "GGUF model file, as -m (vLLM's `vllm serve MODEL`)")
        ->type_name("FILE");
    sv->add_flag_callback(
        "--no-enable-prefix-caching", [&o] { o.cache_mode = "none"; },
        "vLLM's spelling of --cache-mode none (every request computed in full)");
    sv->add_flag_callback(
        "--log-disable", [&o] { o.common.log_level = "off"; }, "llama-server's spelling of --log-level off");
    sv->add_flag_callback(
        "-v,--verbose,--log-verbose",
        [&o] {
            o.common.log_level = "debug";
            o.verbose_replies = true;
        },
        "llama-server's spelling of --log-level debug; replies then carry its __verbose object (the prompt as "
        "the model read it, ...) unless a request sets verbose false");
    // llama.cpp's verbosity: 0 generic output, 1 errors, 2 warnings, 3 info, 4 debug.
    sv->add_option_function<int>(
          "--log-verbosity,--verbosity",
          [&o](int n) {
              static const char* const kLevels[] = {"off", "error", "warn", "info", "debug"};
              o.common.log_level = kLevels[std::clamp(n, 0, 4)];
          },
          "llama-server's -lv N: --log-level off (0), error (1), warn (2), info (3) or debug (4 and above)")
        ->type_name("N");
    sv->add_flag_callback(
        "--log-jsonl", [&o] { o.common.log_format = "json"; }, "llama-server's spelling of --log-format json");
    sv->add_flag_callback(
        "--no-log-jsonl", [&o] { o.common.log_format = "text"; }, "llama-server's spelling of --log-format text");
    sv->add_flag_callback(
        "--no-cache-prompt", [&o] { o.cache_mode = "none"; },
        "llama-server's spelling of --cache-mode none (every request computed in full)");
}

void add_list_flags_option(CLI::App* sv) {
    // Hidden: every spelling serve takes, for tests/e2e/test_llama_server_flags.py. One option a
    // line, "option|warn|refuse VALUES NAME,NAME... HELP" (VALUES: 0 a flag, -1 an optional value),
    // then "short -ngl --n-gpu-layers" for each multi-letter single-dash spelling.
    sv->add_flag_callback(
          "--list-flags",
          [sv] {
              for (const CLI::Option* opt : sv->get_options()) {
                  if (opt->get_lnames().empty() && opt->get_snames().empty()) continue;  // the positional
                  const std::string& help = opt->get_description();
                  const bool compat = opt->get_group().rfind("Compat", 0) == 0;
                  const char* kind = !compat ? "option" : help.rfind("refused: ", 0) == 0 ? "refuse" : "warn";
                  const int values = opt->get_items_expected_max() == 0 ? 0
                                     : opt->get_expected_min() == 0     ? -1
                                                                        : opt->get_items_expected_min();
                  std::string names;
                  for (const std::string& n : opt->get_snames()) names += (names.empty() ? "-" : ",-") + n;
                  for (const std::string& n : opt->get_lnames()) names += (names.empty() ? "--" : ",--") + n;
                  std::cout << kind << ' ' << values << ' ' << names << ' ' << help << '\n';
              }
              for (const auto& [single_dash, long_name] : compat_short_spellings()) {
                  std::cout << "short " << single_dash << ' ' << long_name << '\n';
              }
              throw CLI::Success();
          },
          "")
        ->group("");
}

// Each serve option with a value also reads LAZYATTN_ARG_<NAME> (env_name_for).
void add_serve_env_names(CLI::App* sv) {
    for (CLI::Option* opt : sv->get_options()) {
        if (opt == sv->get_help_ptr() || opt->get_lnames().empty() || opt->get_group().rfind("Compat", 0) == 0 ||
            opt->get_type_size() == 0) {
            continue;
        }
        opt->envname(env_name_for(opt->get_lnames().front()));
    }
}

}  // namespace

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o) {
    CLI::App* sv = app.add_subcommand("serve", "OpenAI-compatible HTTP server (completions, chat, documents, metrics)");
    sv->set_help_flag("-h,--help,--usage", "print this help message and exit");
    // The groups in the order --help lists them.
    add_common_options(sv, o.common);
    add_serve_network_options(sv, o);
    add_serve_engine_options(sv, o);
    add_serve_reasoning_options(sv, o);
    add_serve_auth_options(sv, o);
    add_serve_document_options(sv, o);
    add_serve_sampling_options(sv, o);
    add_serve_limit_options(sv, o);
    add_serve_other_spellings(sv, o);
    sv->add_flag("--check", o.check,
                 "load the model, size the KV pool, bind the port, print what serve would run, then exit (0: it "
                 "would start)");
    add_compat_flags(sv, true, o.common.compat_warnings);
    add_list_flags_option(sv);
    add_serve_env_names(sv);
    return sv;
}

Expected<kernels::KvDtype> parse_kv_dtype_option(const std::string& name) {
    // vLLM's and llama.cpp's other spellings of the same types.
    static const std::map<std::string, std::string> aliases{{"auto", "f16"},      {"float16", "f16"}, {"half", "f16"},
                                                            {"bfloat16", "bf16"}, {"float32", "f32"}, {"float", "f32"}};
    const auto alias = aliases.find(name);
    if (const auto t = kernels::parse_kv_dtype(alias != aliases.end() ? alias->second : name)) return *t;
    if (name.rfind("fp8", 0) == 0) {
        return invalid_argument("KV type '" + name + "' is not supported: the 8-bit KV here is q8_0 (int8 with an " +
                                "fp16 scale per 32 values, llama.cpp's format)");
    }
    return invalid_argument("KV type '" + name + "' is not one of f16, bf16, f32, q8_0, q4_0 (or auto)");
}

std::vector<std::string> normalize_arguments(int argc, char** argv) {
    std::map<std::string, std::string> spellings;
    for (const auto& [single_dash, long_name] : compat_short_spellings()) spellings.emplace(single_dash, long_name);
    std::vector<std::string> out;
    for (int i = 0; i < argc; ++i) {
        // llama.cpp reads --backend_sampling as --backend-sampling: underscores in a long name.
        std::string word = argv[i];
        if (i > 0 && word.size() > 2 && word.compare(0, 2, "--") == 0) {
            std::replace(word.begin(), word.begin() + std::min(word.find('='), word.size()), '_', '-');
        }
        auto it = spellings.find(word);
        out.push_back(i > 0 && it != spellings.end() ? it->second : word);
        // A flag whose value is optional takes the next word only when it is one of its values,
        // joined here (`-fa on` is --flash-attn=on; in `-fa MODEL` the model stays positional).
        const auto values = compat_optional_values(out.back());
        if (i == 0 || values.empty()) continue;
        const bool valued = i + 1 < argc && std::find_if(values.begin(), values.end(), [&](const char* v) {
                                                return std::string_view(argv[i + 1]) == v;
                                            }) != values.end();
        out.back() += std::string("=") + (valued ? argv[++i] : values.front());
    }
    return out;
}

}  // namespace lazyattn::cli
