#include "cli/compat_flags.h"

#include <algorithm>
#include <cstring>

namespace lazyattn::cli {
namespace {

constexpr CompatAction kWarn = CompatAction::kWarn;
constexpr CompatAction kRefuse = CompatAction::kRefuse;
constexpr const char* kLlama = "llama-server";
constexpr const char* kVllm = "vLLM";
constexpr const char* kBoth = "llama-server, vLLM";

// clang-format off
const CompatFlag kFlags[] = {
    // Devices and memory.
    {"--n-gpu-layers,--gpu-layers", kLlama, 1, kWarn,
     "the whole model runs on one device, chosen with --device cpu|cuda; there is no layer split", nullptr, false},
    {"--split-mode", kLlama, 1, kWarn, "one device per process (--device); nothing to split", nullptr, false},
    {"--tensor-split", kLlama, 1, kWarn, "one device per process (--device); nothing to split", nullptr, false},
    {"--main-gpu", kLlama, 1, kWarn, "one device per process (--device cuda uses the first GPU)", nullptr, false},
    {"--tensor-parallel-size", kVllm, 1, kRefuse,
     "one device per process: run one `lazyattn serve` per GPU behind a load balancer", "1", false},
    {"--pipeline-parallel-size", kVllm, 1, kRefuse,
     "one device per process: run one `lazyattn serve` per GPU behind a load balancer", "1", false},
    {"--data-parallel-size", kVllm, 1, kRefuse,
     "one engine per process: run one `lazyattn serve` per replica behind a load balancer", "1", false},
    {"--gpu-memory-utilization", kVllm, 1, kWarn,
     "the KV pool is sized in MiB, not as a share of device memory: --kv-cache-mb (default 512)", nullptr, false},
    {"--swap-space", kVllm, 1, kWarn,
     "preempted requests are recomputed, never swapped; cached documents spill to --kv-store", nullptr, false},
    {"--cpu-offload-gb", kVllm, 1, kWarn, "weights stay on the one --device", nullptr, false},
    {"--mlock", kLlama, 0, kWarn, "weights are mapped from the GGUF file and not locked in RAM", nullptr, false},
    {"--no-mmap", kLlama, 0, kWarn, "weights are always read through mmap of the GGUF file", nullptr, false},
    {"--numa", kLlama, 1, kWarn, "no NUMA placement; pin the process with numactl instead", nullptr, false},
    {"--threads-batch", kLlama, 1, kWarn, "one thread pool for prefill and decode: --threads (-t)", nullptr, false},
    // Kernels and numerics.
    {"--flash-attn", kLlama, -1, kWarn,
     "attention is always fused (online softmax over KV blocks, no score matrix); there is no other path", nullptr,
     false},
    {"--dtype", kVllm, 1, kWarn,
     "weights compute in the GGUF file's own types (choose the file); the KV type is --kv-dtype", nullptr, false},
    {"--quantization", kVllm, 1, kWarn, "the quantization is the GGUF file's own; choose the file", nullptr, false},
    {"--enforce-eager", kVllm, 0, kWarn, "there are no CUDA graphs to turn off", nullptr, false},
    {"--trust-remote-code", kVllm, 0, kWarn, "a GGUF file carries no code to trust", nullptr, false},
    {"--load-format", kVllm, 1, kWarn, "models are GGUF files only", nullptr, false},
    {"--download-dir", kVllm, 1, kWarn, "nothing is downloaded; pass a local GGUF with -m", nullptr, false},
    {"--tokenizer", kVllm, 1, kWarn, "the tokenizer is the GGUF file's own", nullptr, false},
    {"--seed", kBoth, 1, kWarn, "sampling seeds are per request (the request's \"seed\")", nullptr, false},
    {"--hf-repo", kLlama, 1, kRefuse, "nothing is downloaded: pass a local GGUF file with -m FILE", nullptr, false},
    {"--hf-file", kLlama, 1, kRefuse, "nothing is downloaded: pass a local GGUF file with -m FILE", nullptr, false},
    {"--lora", kLlama, 1, kRefuse, "LoRA adapters are not supported: merge the adapter into the GGUF", nullptr, false},
    {"--model-draft", kLlama, 1, kRefuse, "speculative decoding is not supported", nullptr, false},
    // Serving: what is always on, or per request.
    {"--jinja", kLlama, 0, kWarn,
     "the model's Jinja chat template is always used (--chat-template chatml|llama3|FILE overrides it)", nullptr, true},
    {"--cont-batching", kLlama, 0, kWarn, "continuous batching is always on", nullptr, true},
    {"--no-cont-batching", kLlama, 0, kWarn, "continuous batching is always on and cannot be turned off", nullptr,
     true},
    {"--enable-prefix-caching", kVllm, 0, kWarn,
     "document and prefix caching is always on (--cache-mode lazy; --cache-mode prefix caches exact prefixes as vLLM "
     "does)", nullptr, true},
    {"--enable-chunked-prefill", kVllm, 0, kWarn,
     "prefill is always chunked under --max-batch-tokens (alias --max-num-batched-tokens)", nullptr, true},
    {"--cache-reuse", kLlama, 1, kWarn,
     "cached documents are reused at any position, always (--cache-mode lazy)", nullptr, true},
    {"--ubatch-size", kLlama, 1, kWarn,
     "one batch size: --max-batch-tokens (-b, --batch-size) rows per forward step", nullptr, true},
    {"--kv-unified", kLlama, 0, kWarn, "the KV pool is always shared by every request (--kv-cache-mb)", nullptr, true},
    {"--defrag-thold", kLlama, 1, kWarn, "the KV pool is paged in blocks and never needs defragmenting", nullptr,
     true},
    {"--n-predict", kLlama, 1, kWarn,
     "each request names max_tokens (the route picks a default when it does not); --max-tokens-cap clamps it",
     nullptr, true},
    {"--metrics", kLlama, 0, kWarn, "/metrics is always served (with API keys, --open-endpoints metrics)", nullptr,
     true},
    {"--slots", kLlama, 0, kWarn, "there is no /slots endpoint; /metrics and /health report the engine", nullptr,
     true},
    {"--no-webui", kLlama, 0, kWarn, "there is no web UI", nullptr, true},
    {"--disable-log-requests", kVllm, 0, kWarn, "requests are not logged one by one (--log-level debug does)",
     nullptr, true},
    {"--disable-log-stats", kVllm, 0, kWarn, "the stats line is printed every --stats-interval seconds while busy",
     nullptr, true},
    {"--uvicorn-log-level", kVllm, 1, kWarn, "one log for everything: --log-level", nullptr, true},
    {"--max-logprobs", kVllm, 1, kWarn, "requests may ask for up to 20 logprobs", nullptr, true},
    {"--generation-config", kVllm, 1, kWarn, "sampling defaults are the OpenAI API's; requests set their own",
     nullptr, true},
    {"--enable-auto-tool-choice", kVllm, 0, kRefuse, "tool calling is not supported (requests with tools get 400)",
     nullptr, true},
    {"--tool-call-parser", kVllm, 1, kRefuse, "tool calling is not supported (requests with tools get 400)", nullptr,
     true},
    {"--embeddings,--embedding", kLlama, 0, kRefuse, "there is no embeddings endpoint", nullptr, true},
    {"--ssl-key-file,--ssl-keyfile", kBoth, 1, kRefuse, "no TLS: put a TLS-terminating proxy in front", nullptr, true},
    {"--ssl-cert-file,--ssl-certfile", kBoth, 1, kRefuse, "no TLS: put a TLS-terminating proxy in front", nullptr, true},
};

const std::pair<const char*, const char*> kShortSpellings[] = {
    {"-np", "--parallel"},        {"-ctk", "--cache-type-k"},   {"-ctv", "--cache-type-v"},
    {"-ngl", "--n-gpu-layers"},   {"-fa", "--flash-attn"},      {"-cb", "--cont-batching"},
    {"-nocb", "--no-cont-batching"}, {"-ub", "--ubatch-size"},  {"-tb", "--threads-batch"},
    {"-sm", "--split-mode"},      {"-ts", "--tensor-split"},    {"-mg", "--main-gpu"},
    {"-hf", "--hf-repo"},         {"-hfr", "--hf-repo"},        {"-hff", "--hf-file"},
    {"-md", "--model-draft"},     {"-kvu", "--kv-unified"},     {"-dt", "--defrag-thold"},
    {"-tp", "--tensor-parallel-size"}, {"-pp", "--pipeline-parallel-size"}, {"-dp", "--data-parallel-size"},
    {"-to", "--timeout"},
};
// clang-format on

std::string first_name(const char* names) {
    const char* comma = std::strchr(names, ',');
    return comma == nullptr ? std::string(names) : std::string(names, comma);
}

// Whether `cmd` already has an option under one of `names` (its own meaning wins).
bool any_name_taken(CLI::App* cmd, const std::string& names) {
    for (size_t start = 0; start < names.size();) {
        const size_t comma = std::min(names.find(',', start), names.size());
        if (cmd->get_option_no_throw(names.substr(start, comma - start)) != nullptr) return true;
        start = comma + 1;
    }
    return false;
}

std::string refusal(const CompatFlag& f, const std::string& spelled) {
    return spelled + " (" + f.peer + ") is not supported here: " + f.why;
}

}  // namespace

std::span<const CompatFlag> compat_flags() { return kFlags; }

std::span<const char* const> compat_optional_values(const std::string& long_name) {
    // llama-server's -fa [on|off|auto] (older builds: a bare flag, and 1/0 spellings).
    static const char* const kFlashAttn[] = {"on", "off", "auto", "1", "0", "true", "false", "enabled", "disabled"};
    if (long_name == "--flash-attn") return kFlashAttn;
    return {};
}

std::span<const std::pair<const char*, const char*>> compat_short_spellings() { return kShortSpellings; }

void add_compat_flags(CLI::App* cmd, bool serve_only, std::vector<std::string>& warnings) {
    const std::string group = "Compatibility (llama-server, vLLM; docs/api.md)";
    for (const CompatFlag& f : kFlags) {
        if (f.serve_only != serve_only || any_name_taken(cmd, f.names)) continue;
        const std::string name = first_name(f.names);
        const std::string help = std::string(f.action == kWarn ? "ignored: " : "refused: ") + f.why;
        CLI::Option* opt = nullptr;
        if (f.num_values == 0) {
            opt = cmd->add_flag_callback(
                f.names,
                [&f, &warnings, name] {
                    if (f.action == kRefuse) throw CLI::ValidationError(refusal(f, name));
                    warnings.push_back(name + " (" + f.peer + ") ignored: " + f.why);
                },
                help);
        } else {
            opt = cmd->add_option_function<std::string>(
                f.names,
                [&f, &warnings, name](const std::string& value) {
                    const std::string spelled = value.empty() ? name : name + " " + value;
                    const bool accepted = f.accept != nullptr && value == f.accept;
                    if (f.action == kRefuse && !accepted) throw CLI::ValidationError(refusal(f, spelled));
                    warnings.push_back(spelled + " (" + f.peer + ") ignored: " + f.why);
                },
                help);
            opt->type_name(f.num_values < 0 ? "[VALUE]" : "VALUE");
            if (f.num_values < 0) opt->expected(0, 1);
        }
        opt->group(group);
    }
}

}  // namespace lazyattn::cli
