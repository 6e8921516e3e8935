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

// Reasons several rows share.
constexpr const char* kDownload = "nothing is downloaded: pass a local GGUF file with -m FILE";
constexpr const char* kAffinity =
    "no CPU affinity, priority or polling settings: pin and prioritise the process with taskset, numactl or nice";
constexpr const char* kPlacement = "the whole model and its KV stay on the one --device; there is no tensor placement";
constexpr const char* kRope = "RoPE and YaRN parameters are the GGUF file's own metadata";
constexpr const char* kFit =
    "nothing is fitted to device memory: the KV pool is --kv-cache-mb and the context --ctx-size";
constexpr const char* kSampling =
    "requests carry their own (the API's fields); server-wide defaults are --temp, --top-k, --top-p, --min-p, "
    "--repeat-penalty, --seed and --n-predict";
constexpr const char* kGrammar =
    "there is no server-wide constraint: each request sends its own (`grammar`, `json_schema`, `response_format`)";
constexpr const char* kSpec = "speculative decoding is not served (no draft model, no n-gram drafts)";
constexpr const char* kSpecOff = "speculative decoding is never on";
constexpr const char* kLora = "LoRA adapters and control vectors are not served: merge the adapter into the GGUF";
constexpr const char* kEmbed = "there is no embeddings or rerank endpoint (they answer 501)";
constexpr const char* kVision = "images, audio and video are not served: text-only models, no multimodal projector";
constexpr const char* kNoProjector = "no multimodal projector is ever loaded: text-only models";
constexpr const char* kNoUi = "there is no web UI";
constexpr const char* kTools =
    "the server runs no tools (no agent loop, no MCP): a request's `tools` come back as tool_calls for the client "
    "to run";
constexpr const char* kNoTools = "there are no built-in tools or MCP proxy";
constexpr const char* kBuiltinTools = "built-in tools are not served (GET and POST /tools answer 501)";
constexpr const char* kMcp = "MCP is not served (/tools and /cors-proxy answer 501; a request's own tools are served)";
constexpr const char* kRouter =
    "one model per process, no model router: run one `lazyattn serve` per model behind a proxy";
constexpr const char* kNoRouter = "one model per process: there is no model router";
constexpr const char* kCors = "no CORS headers are sent (browsers refuse cross-origin calls): add them in a proxy";
constexpr const char* kCheckpoints =
    "no context checkpoints or slot caches: cached documents and prefixes are reused from the paged KV pool "
    "(--kv-cache-mb, --kv-store)";
constexpr const char* kLogLines = "log lines always carry their time and level (--log-format text|json)";
constexpr const char* kPreset = "a llama.cpp model preset downloads its model: pass a local GGUF file with -m FILE";

// clang-format off
const CompatFlag kFlags[] = {
    // Devices, threads and memory.
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
    {"--load-mode", kLlama, 1, kWarn, "weights are always read through mmap of the GGUF file", nullptr, false},
    {"--lazy-mode", kLlama, 1, kWarn, "weights are mapped from the GGUF file; pages load as they are read", nullptr,
     false},
    {"--numa", kLlama, 1, kWarn, "no NUMA placement; pin the process with numactl instead", nullptr, false},
    {"--threads-batch", kLlama, 1, kWarn, "one thread pool for prefill and decode: --threads (-t)", nullptr, false},
    {"--cpu-mask,-C", kLlama, 1, kWarn, kAffinity, nullptr, false},
    {"--cpu-range", kLlama, 1, kWarn, kAffinity, nullptr, false},
    {"--cpu-strict", kLlama, 1, kWarn, kAffinity, nullptr, false},
    {"--prio", kLlama, 1, kWarn, kAffinity, nullptr, false},
    {"--poll", kLlama, 1, kWarn, kAffinity, nullptr, false},
    {"--cpu-mask-batch", kLlama, 1, kWarn, kAffinity, nullptr, false},
    {"--cpu-range-batch", kLlama, 1, kWarn, kAffinity, nullptr, false},
    {"--cpu-strict-batch", kLlama, 1, kWarn, kAffinity, nullptr, false},
    {"--prio-batch", kLlama, 1, kWarn, kAffinity, nullptr, false},
    {"--poll-batch", kLlama, 1, kWarn, kAffinity, nullptr, false},
    {"--override-tensor", kLlama, 1, kWarn, kPlacement, nullptr, false},
    {"--cpu-moe", kLlama, 0, kWarn, kPlacement, nullptr, false},
    {"--n-cpu-moe", kLlama, 1, kWarn, kPlacement, nullptr, false},
    {"--n-cpu-ffn", kLlama, 1, kWarn, kPlacement, nullptr, false},
    {"--kv-offload", kLlama, 0, kWarn, "the KV cache lives on the one --device", nullptr, false},
    {"--no-kv-offload", kLlama, 0, kWarn, "the KV cache lives on the one --device", nullptr, false},
    {"--op-offload", kLlama, 0, kWarn, "operations run on the one --device; nothing is offloaded", nullptr, false},
    {"--no-op-offload", kLlama, 0, kWarn, "operations run on the one --device; nothing is offloaded", nullptr, false},
    {"--repack", kLlama, 0, kWarn, "weights are read in the layouts the kernels take; repacking is not a choice",
     nullptr, false},
    {"--no-repack", kLlama, 0, kWarn, "weights are read in the layouts the kernels take; repacking is not a choice",
     nullptr, false},
    {"--no-host", kLlama, 0, kWarn, "there are no host buffer types to bypass: weights are mapped from the GGUF file",
     nullptr, false},
    {"--fit", kLlama, 1, kWarn, kFit, nullptr, false},
    {"--fit-target", kLlama, 1, kWarn, kFit, nullptr, false},
    {"--fit-ctx", kLlama, 1, kWarn, kFit, nullptr, false},
    {"--rpc", kLlama, 1, kRefuse, "there are no RPC backends: one device per process (--device cpu|cuda)", nullptr,
     false},
    {"--list-devices", kLlama, 0, kRefuse,
     "devices are cpu and cuda (--device); `lazyattn --version` says whether CUDA is built in", nullptr, true},
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
    {"--check-tensors", kLlama, 0, kWarn,
     "tensor data is not scanned at load (`lazyattn info` describes a file)", nullptr, false},
    {"--override-kv", kLlama, 1, kRefuse,
     "GGUF metadata is used as stored: edit the file (gguf-py) to change it", nullptr, false},
    {"--rope-scaling", kLlama, 1, kWarn, kRope, nullptr, false},
    {"--rope-scale", kLlama, 1, kWarn, kRope, nullptr, false},
    {"--rope-freq-base", kLlama, 1, kWarn, kRope, nullptr, false},
    {"--rope-freq-scale", kLlama, 1, kWarn, kRope, nullptr, false},
    {"--yarn-orig-ctx", kLlama, 1, kWarn, kRope, nullptr, false},
    {"--yarn-ext-factor", kLlama, 1, kWarn, kRope, nullptr, false},
    {"--yarn-attn-factor", kLlama, 1, kWarn, kRope, nullptr, false},
    {"--yarn-beta-slow", kLlama, 1, kWarn, kRope, nullptr, false},
    {"--yarn-beta-fast", kLlama, 1, kWarn, kRope, nullptr, false},
    {"--seed,-s", kBoth, 1, kWarn, "sampling seeds are per request (the request's \"seed\")", nullptr, false},
    // Models: local GGUF files only.
    {"--hf-repo", kLlama, 1, kRefuse, kDownload, nullptr, false},
    {"--hf-file", kLlama, 1, kRefuse, kDownload, nullptr, false},
    {"--hf-token", kLlama, 1, kWarn, "nothing is downloaded, so no token is used", nullptr, false},
    {"--model-url", kLlama, 1, kRefuse, kDownload, nullptr, false},
    {"--docker-repo", kLlama, 1, kRefuse, kDownload, nullptr, false},
    {"--offline", kLlama, 0, kWarn, "nothing is ever downloaded", nullptr, false},
    {"--lora", kLlama, 1, kRefuse, kLora, nullptr, false},
    {"--lora-scaled", kLlama, 1, kRefuse, kLora, nullptr, false},
    {"--control-vector", kLlama, 1, kRefuse, kLora, nullptr, false},
    {"--control-vector-scaled", kLlama, 1, kRefuse, kLora, nullptr, false},
    {"--control-vector-layer-range", kLlama, 2, kRefuse, kLora, nullptr, false},
    {"--lora-init-without-apply", kLlama, 0, kRefuse, kLora, nullptr, true},
    {"--embd-gemma-default", kLlama, 0, kRefuse, kPreset, nullptr, true},
    {"--fim-qwen-1.5b-default", kLlama, 0, kRefuse, kPreset, nullptr, true},
    {"--fim-qwen-3b-default", kLlama, 0, kRefuse, kPreset, nullptr, true},
    {"--fim-qwen-7b-default", kLlama, 0, kRefuse, kPreset, nullptr, true},
    {"--fim-qwen-7b-spec", kLlama, 0, kRefuse, kPreset, nullptr, true},
    {"--fim-qwen-14b-spec", kLlama, 0, kRefuse, kPreset, nullptr, true},
    {"--fim-qwen-30b-default", kLlama, 0, kRefuse, kPreset, nullptr, true},
    {"--gpt-oss-20b-default", kLlama, 0, kRefuse, kPreset, nullptr, true},
    {"--gpt-oss-120b-default", kLlama, 0, kRefuse, kPreset, nullptr, true},
    {"--vision-gemma-4b-default", kLlama, 0, kRefuse, kPreset, nullptr, true},
    {"--vision-gemma-12b-default", kLlama, 0, kRefuse, kPreset, nullptr, true},
    // Speculative decoding.
    {"--model-draft,--spec-draft-model", kLlama, 1, kRefuse, kSpec, nullptr, false},
    {"--spec-type", kLlama, 1, kRefuse, kSpec, "none", true},
    {"--spec-default", kLlama, 0, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-hf,--hf-repo-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-threads,--threads-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-threads-batch,--threads-batch-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-cpu-mask,--cpu-mask-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-cpu-range,--cpu-range-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-cpu-strict,--cpu-strict-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-prio,--prio-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-poll,--poll-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-cpu-mask-batch,--cpu-mask-batch-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-cpu-strict-batch,--cpu-strict-batch-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-prio-batch,--prio-batch-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-poll-batch,--poll-batch-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-type-k,--cache-type-k-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-type-v,--cache-type-v-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-override-tensor,--override-tensor-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-cpu-moe,--cpu-moe-draft", kLlama, 0, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-n-cpu-moe,--spec-draft-ncmoe,--n-cpu-moe-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-n-max", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-n-min", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-synth-len", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-synth-rates", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-p-split,--draft-p-split", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-p-min,--draft-p-min", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-backend-sampling", kLlama, 0, kRefuse, kSpec, nullptr, true},
    {"--no-spec-draft-backend-sampling", kLlama, 0, kWarn, kSpecOff, nullptr, true},
    {"--spec-draft-device,--device-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-draft-ngl,--gpu-layers-draft,--n-gpu-layers-draft", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-mod-n-min", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-mod-n-max", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-mod-n-match", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-simple-size-n", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-simple-size-m", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-simple-min-hits", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-map-k-size-n", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-map-k-size-m", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-map-k-min-hits", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-map-k4v-size-n", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-map-k4v-size-m", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-map-k4v-min-hits", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-size-n", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-size-m", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--spec-ngram-min-hits", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--draft,--draft-n,--draft-max", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--draft-min,--draft-n-min", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--lookup-cache-static", kLlama, 1, kRefuse, kSpec, nullptr, true},
    {"--lookup-cache-dynamic", kLlama, 1, kRefuse, kSpec, nullptr, true},
    // Serving: what is always on, or per request.
    {"--jinja", kLlama, 0, kWarn,
     "chat templates are always Jinja: the model's, or --chat-template's (a built-in name, the text, or a file)",
     nullptr, true},
    {"--no-jinja", kLlama, 0, kWarn,
     "chat templates are always Jinja: the model's, or --chat-template's (a built-in name, the text, or a file)",
     nullptr, true},
    {"--cont-batching", kLlama, 0, kWarn, "continuous batching is always on", nullptr, true},
    {"--no-cont-batching", kLlama, 0, kWarn, "continuous batching is always on and cannot be turned off", nullptr,
     true},
    {"--enable-prefix-caching", kVllm, 0, kWarn,
     "document and prefix caching is always on (--cache-mode lazy; --cache-mode prefix caches exact prefixes as vLLM "
     "does)", nullptr, true},
    {"--enable-chunked-prefill", kVllm, 0, kWarn,
     "prefill is always chunked under --max-batch-tokens (alias --max-num-batched-tokens)", nullptr, true},
    {"--cache-prompt", kLlama, 0, kWarn,
     "prompt and document caching is always on (--cache-mode; --no-cache-prompt is --cache-mode none)", nullptr, true},
    {"--cache-reuse", kLlama, 1, kWarn,
     "cached documents are reused at any position, always (--cache-mode lazy)", nullptr, true},
    {"--ubatch-size", kLlama, 1, kWarn,
     "one batch size: --max-batch-tokens (-b, --batch-size) rows per forward step", nullptr, true},
    {"--kv-unified", kLlama, 0, kWarn, "the KV pool is always shared by every request (--kv-cache-mb)", nullptr, true},
    {"--no-kv-unified", kLlama, 0, kWarn,
     "the KV pool is always shared by every request (--kv-cache-mb) and cannot be split", nullptr, true},
    {"--kv-unified-per-slot", kLlama, 1, kWarn,
     "the KV pool is shared by every request; one request is bounded by --ctx-size, or --ctx-size / N under "
     "--parallel N", nullptr, true},
    {"--swa-full", kLlama, 0, kWarn,
     "sliding-window layers keep every position's KV in the paged pool (the window is a mask)", nullptr, true},
    {"--ctx-checkpoints,--swa-checkpoints", kLlama, 1, kWarn, kCheckpoints, nullptr, true},
    {"--checkpoint-min-step", kLlama, 1, kWarn, kCheckpoints, nullptr, true},
    {"--cache-ram", kLlama, 1, kWarn,
     "the prompt cache is the KV pool itself: size it with --kv-cache-mb; cached documents spill to --kv-store",
     nullptr, true},
    {"--cache-idle-slots", kLlama, 0, kWarn,
     "there are no slots: a finished request's documents stay cached in the KV pool until evicted", nullptr, true},
    {"--no-cache-idle-slots", kLlama, 0, kWarn,
     "there are no slots: a finished request's documents stay cached in the KV pool until evicted", nullptr, true},
    {"--slot-prompt-similarity", kLlama, 1, kWarn,
     "there are no slots to match: cached documents and prefixes are found by their content", nullptr, true},
    {"--context-shift", kLlama, 0, kWarn,
     "there is no context shift: generation stops at the context length (finish_reason length)", nullptr, true},
    {"--no-context-shift", kLlama, 0, kWarn, "there is never a context shift", nullptr, true},
    {"--keep", kLlama, 1, kWarn, "there is no context shift, so no prompt tokens to keep", nullptr, true},
    {"--defrag-thold", kLlama, 1, kWarn, "the KV pool is paged in blocks and never needs defragmenting", nullptr,
     true},
    {"--warmup", kLlama, 0, kWarn, "there is no warm-up run (--check loads the model and exits)", nullptr, true},
    {"--no-warmup", kLlama, 0, kWarn, "there is no warm-up run", nullptr, true},
    {"--perf", kLlama, 0, kWarn, "timings are always measured: /metrics and the stats line report them", nullptr,
     true},
    {"--no-perf", kLlama, 0, kWarn, "timings are always measured: /metrics and the stats line report them", nullptr,
     true},
    {"--escape,-e", kLlama, 0, kWarn, "prompts arrive in JSON bodies; there are no escape sequences to process",
     nullptr, true},
    {"--no-escape", kLlama, 0, kWarn, "prompts arrive in JSON bodies; there are no escape sequences to process",
     nullptr, true},
    {"--reverse-prompt,-r", kLlama, 1, kWarn, "stop strings are per request (the request's \"stop\")", nullptr, true},
    {"--special", kLlama, 0, kWarn,
     "generated text is detokenized the same way for every request; there is no switch for special tokens", nullptr,
     true},
    {"--spm-infill", kLlama, 0, kRefuse, "there is no /infill endpoint", nullptr, true},
    // Sampling defaults: every request carries its own.
    {"--repeat-last-n", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--presence-penalty", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--frequency-penalty", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--samplers", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--sampler-seq,--sampling-seq", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--ignore-eos", kLlama, 0, kWarn, kSampling, nullptr, true},
    {"--top-nsigma,--top-n-sigma", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--xtc-probability", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--xtc-threshold", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--typical,--typical-p", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--dry-multiplier", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--dry-base", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--dry-allowed-length", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--dry-penalty-last-n", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--dry-sequence-breaker", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--adaptive-target", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--adaptive-decay", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--dynatemp-range", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--dynatemp-exp", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--mirostat", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--mirostat-lr", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--mirostat-ent", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--logit-bias,-l", kLlama, 1, kWarn, kSampling, nullptr, true},
    {"--backend-sampling", kLlama, 0, kWarn, "there is no backend-sampling switch: the engine samples each step",
     nullptr, true},
    {"--grammar", kLlama, 1, kRefuse, kGrammar, nullptr, true},
    {"--grammar-file", kLlama, 1, kRefuse, kGrammar, nullptr, true},
    {"--json-schema,-j", kLlama, 1, kRefuse, kGrammar, nullptr, true},
    {"--json-schema-file", kLlama, 1, kRefuse, kGrammar, nullptr, true},
    // Chat templates and reasoning.
    // (--chat-template-kwargs, --reasoning, --reasoning-format, --reasoning-budget: serve's own.)
    {"--reasoning-effort", kLlama, 1, kWarn,
     "not passed to the template by this flag: give it as --chat-template-kwargs '{\"reasoning_effort\": \"low\"}'",
     nullptr, true},
    {"--reasoning-budget-message", kLlama, 1, kWarn,
     "reasoning has no budget of its own: max_tokens bounds the whole reply", nullptr, true},
    {"--reasoning-preserve", kLlama, 0, kWarn, "messages are rendered as sent, with whatever reasoning they carry",
     nullptr, true},
    {"--no-reasoning-preserve", kLlama, 0, kWarn, "messages are rendered as sent, with whatever reasoning they carry",
     nullptr, true},
    {"--skip-chat-parsing", kLlama, 0, kWarn,
     "a reply is parsed for tool calls when its request offers tools; its <think> section is split by "
     "--reasoning-format (none keeps it in the content)",
     nullptr, true},
    {"--no-skip-chat-parsing", kLlama, 0, kWarn,
     "a reply is parsed for tool calls when its request offers tools; its <think> section is split by "
     "--reasoning-format (none keeps it in the content)",
     nullptr, true},
    {"--prefill-assistant", kLlama, 0, kWarn,
     "a final assistant message is always continued (prefill), as llama-server's default", nullptr, true},
    {"--no-prefill-assistant", kLlama, 0, kWarn,
     "a final assistant message is continued unless the request says continue_final_message: false", nullptr, true},
    // Endpoints and HTTP.
    {"--props", kLlama, 0, kWarn, "GET /props is always served; settings are fixed at start (no POST /props)",
     nullptr, true},
    {"--slot-save-path", kLlama, 1, kWarn,
     "slots are not saved or restored (POST /slots/{id} answers 501); cached documents persist in --kv-store DIR",
     nullptr, true},
    {"--no-webui,--no-ui", kLlama, 0, kWarn, kNoUi, nullptr, true},
    {"--ui,--webui", kLlama, 0, kWarn, kNoUi, nullptr, true},
    {"--ui-config,--webui-config", kLlama, 1, kWarn, kNoUi, nullptr, true},
    {"--ui-config-file,--webui-config-file", kLlama, 1, kWarn, kNoUi, nullptr, true},
    {"--path", kLlama, 1, kWarn, "no static files or web UI are served", nullptr, true},
    {"--api-prefix", kLlama, 1, kRefuse,
     "routes are served at their own paths (/v1/..., /health): add a prefix in a reverse proxy", nullptr, true},
    {"--reuse-port", kLlama, 0, kWarn, "one process per port: SO_REUSEPORT is not set", nullptr, true},
    {"--cors-origins", kLlama, 1, kWarn, kCors, nullptr, true},
    {"--cors-methods", kLlama, 1, kWarn, kCors, nullptr, true},
    {"--cors-headers", kLlama, 1, kWarn, kCors, nullptr, true},
    {"--cors-credentials", kLlama, 0, kWarn, kCors, nullptr, true},
    {"--no-cors-credentials", kLlama, 0, kWarn, kCors, nullptr, true},
    {"--sse-ping-interval", kLlama, 1, kWarn, "streams send no pings: events flow as tokens are generated", nullptr,
     true},
    {"--sleep-idle-seconds", kLlama, 1, kWarn, "the model stays loaded while the server runs", nullptr, true},
    // Routing: one model per process.
    {"--models-dir", kLlama, 1, kRefuse, kRouter, nullptr, true},
    {"--models-preset", kLlama, 1, kRefuse, kRouter, nullptr, true},
    {"--models-max", kLlama, 1, kWarn, kNoRouter, nullptr, true},
    {"--models-autoload", kLlama, 0, kWarn, kNoRouter, nullptr, true},
    {"--no-models-autoload", kLlama, 0, kWarn, kNoRouter, nullptr, true},
    // Logging.
    {"--log-file", kLlama, 1, kWarn, "log lines go to stderr: redirect it (2>>FILE)", nullptr, true},
    {"--log-colors", kLlama, 1, kWarn, "log lines carry no colours", nullptr, true},
    {"--log-prefix", kLlama, 0, kWarn, kLogLines, nullptr, true},
    {"--no-log-prefix", kLlama, 0, kWarn, kLogLines, nullptr, true},
    {"--log-timestamps", kLlama, 0, kWarn, kLogLines, nullptr, true},
    {"--no-log-timestamps", kLlama, 0, kWarn, kLogLines, nullptr, true},
    {"--log-prompts-dir", kLlama, 1, kWarn, "prompts are not written to files (--log-level debug logs requests)",
     nullptr, true},
    {"--disable-log-requests", kVllm, 0, kWarn, "requests are not logged one by one (--log-level debug does)",
     nullptr, true},
    {"--disable-log-stats", kVllm, 0, kWarn, "the stats line is printed every --stats-interval seconds while busy",
     nullptr, true},
    {"--uvicorn-log-level", kVllm, 1, kWarn, "one log for everything: --log-level", nullptr, true},
    {"--max-logprobs", kVllm, 1, kWarn, "requests may ask for up to 20 logprobs", nullptr, true},
    {"--generation-config", kVllm, 1, kWarn, "sampling defaults are the OpenAI API's; requests set their own",
     nullptr, true},
    {"--version", kLlama, 0, kRefuse, "`lazyattn --version` prints the version, commit and build", nullptr, true},
    {"--completion-bash", kLlama, 0, kRefuse, "there is no shell completion script", nullptr, true},
    {"--cache-list", kLlama, 0, kRefuse, "there is no download cache: models are local GGUF files (-m FILE)",
     nullptr, true},
    // Tool calls are always served: vLLM's switches for them change nothing.
    {"--enable-auto-tool-choice", kVllm, 0, kWarn,
     "tool calls are always served: a request's `tools` with tool_choice auto, none, required or a named function",
     nullptr, true},
    {"--tool-call-parser", kVllm, 1, kWarn,
     "the call format follows the chat template (hermes, smollm2, llama3, mistral, phi: docs/api.md \"Tool calls\")",
     nullptr, true},
    // Accepted with a warning: the routes they would enable answer 501 naming the feature.
    {"--tools", kLlama, 1, kWarn, kBuiltinTools, nullptr, true},
    {"--tools-runtime", kLlama, 1, kWarn, kBuiltinTools, nullptr, true},
    {"--mcp-servers-config", kLlama, 1, kWarn, kMcp, nullptr, true},
    {"--mcp-servers-json", kLlama, 1, kWarn, kMcp, nullptr, true},
    {"--agent", kLlama, 0, kRefuse, kTools, nullptr, true},
    {"--no-agent", kLlama, 0, kWarn, kNoTools, nullptr, true},
    {"--ui-mcp-proxy,--webui-mcp-proxy", kLlama, 0, kWarn, kMcp, nullptr, true},
    {"--no-ui-mcp-proxy,--no-webui-mcp-proxy", kLlama, 0, kWarn, kNoTools, nullptr, true},
    // Accepted, not refused: llama-server's test harness starts every preset once (its embedding
    // and reranker ones too) before any test; here their routes answer 501 naming the feature.
    {"--embeddings,--embedding", kLlama, 0, kWarn, kEmbed, nullptr, true},
    {"--rerank,--reranking", kLlama, 0, kWarn, kEmbed, nullptr, true},
    {"--pooling", kLlama, 1, kWarn, kEmbed, nullptr, true},
    {"--embd-normalize", kLlama, 1, kWarn, kEmbed, nullptr, true},
    {"--mmproj", kLlama, 1, kRefuse, kVision, nullptr, true},
    {"--mmproj-url", kLlama, 1, kRefuse, kVision, nullptr, true},
    {"--mmproj-auto", kLlama, 0, kWarn, kNoProjector, nullptr, true},
    {"--no-mmproj,--no-mmproj-auto", kLlama, 0, kWarn, kNoProjector, nullptr, true},
    {"--mmproj-offload", kLlama, 0, kWarn, kNoProjector, nullptr, true},
    {"--no-mmproj-offload", kLlama, 0, kWarn, kNoProjector, nullptr, true},
    {"--mmproj-device", kLlama, 1, kWarn, kNoProjector, nullptr, true},
    {"--image-min-tokens", kLlama, 1, kWarn, kVision, nullptr, true},
    {"--image-max-tokens", kLlama, 1, kWarn, kVision, nullptr, true},
    {"--mtmd-batch-max-tokens", kLlama, 1, kWarn, kVision, nullptr, true},
    {"--video-fps", kLlama, 1, kWarn, kVision, nullptr, true},
    {"--video-timestamp-interval", kLlama, 1, kWarn, kVision, nullptr, true},
    {"--video-ffmpeg-dir", kLlama, 1, kWarn, kVision, nullptr, true},
    {"--media-path", kLlama, 1, kWarn, "no media input (images, audio) is served, so no local media files are read",
     nullptr, true},
    {"--ssl-key-file,--ssl-keyfile", kBoth, 1, kRefuse, "no TLS: put a TLS-terminating proxy in front", nullptr, true},
    {"--ssl-cert-file,--ssl-certfile", kBoth, 1, kRefuse, "no TLS: put a TLS-terminating proxy in front", nullptr, true},
};

// llama.cpp's multi-letter single-dash spellings (its one-letter ones are CLI11 short names).
const std::pair<const char*, const char*> kShortSpellings[] = {
    {"-np", "--parallel"},        {"-ctk", "--cache-type-k"},   {"-ctv", "--cache-type-v"},
    {"-ngl", "--n-gpu-layers"},   {"-fa", "--flash-attn"},      {"-cb", "--cont-batching"},
    {"-nocb", "--no-cont-batching"}, {"-ub", "--ubatch-size"},  {"-tb", "--threads-batch"},
    {"-sm", "--split-mode"},      {"-ts", "--tensor-split"},    {"-mg", "--main-gpu"},
    {"-hf", "--hf-repo"},         {"-hfr", "--hf-repo"},        {"-hff", "--hf-file"},
    {"-md", "--model-draft"},     {"-kvu", "--kv-unified"},     {"-dt", "--defrag-thold"},
    {"-tp", "--tensor-parallel-size"}, {"-pp", "--pipeline-parallel-size"}, {"-dp", "--data-parallel-size"},
    {"-to", "--timeout"},
    {"-cl", "--cache-list"},      {"-Cr", "--cpu-range"},       {"-Cb", "--cpu-mask-batch"},
    {"-Crb", "--cpu-range-batch"}, {"-lcs", "--lookup-cache-static"}, {"-lcd", "--lookup-cache-dynamic"},
    {"-ctxcp", "--ctx-checkpoints"}, {"-cms", "--checkpoint-min-step"}, {"-cram", "--cache-ram"},
    {"-no-kvu", "--no-kv-unified"}, {"-sp", "--special"},       {"-jf", "--json-schema-file"},
    {"-bs", "--backend-sampling"}, {"-kvo", "--kv-offload"},    {"-nkvo", "--no-kv-offload"},
    {"-nr", "--no-repack"},       {"-mm", "--mmproj"},          {"-mmu", "--mmproj-url"},
    {"-mmdev", "--mmproj-device"}, {"-lm", "--load-mode"},      {"-lzm", "--lazy-mode"},
    {"-dev", "--device"},         {"-ot", "--override-tensor"}, {"-cmoe", "--cpu-moe"},
    {"-ncmoe", "--n-cpu-moe"},    {"-ncffn", "--n-cpu-ffn"},    {"-fit", "--fit"},
    {"-fitt", "--fit-target"},    {"-fitc", "--fit-ctx"},       {"-mu", "--model-url"},
    {"-dr", "--docker-repo"},     {"-hft", "--hf-token"},       {"-ag", "--agent"},
    {"-no-ag", "--no-agent"},     {"-sps", "--slot-prompt-similarity"}, {"-lv", "--log-verbosity"},
    {"-rea", "--reasoning"},
    {"-hfd", "--spec-draft-hf"},  {"-hfrd", "--spec-draft-hf"}, {"-td", "--spec-draft-threads"},
    {"-tbd", "--spec-draft-threads-batch"}, {"-Cd", "--spec-draft-cpu-mask"}, {"-Crd", "--spec-draft-cpu-range"},
    {"-Cbd", "--spec-draft-cpu-mask-batch"}, {"-ctkd", "--spec-draft-type-k"}, {"-ctvd", "--spec-draft-type-v"},
    {"-otd", "--spec-draft-override-tensor"}, {"-cmoed", "--spec-draft-cpu-moe"},
    {"-ncmoed", "--spec-draft-n-cpu-moe"}, {"-devd", "--spec-draft-device"}, {"-ngld", "--spec-draft-ngl"},
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
        } else if (f.num_values == 2) {  // --control-vector-layer-range START END
            opt = cmd->add_option_function<std::vector<std::string>>(
                f.names,
                [&f, &warnings, name](const std::vector<std::string>& values) {
                    std::string spelled = name;
                    for (const std::string& v : values) spelled += " " + v;
                    if (f.action == kRefuse) throw CLI::ValidationError(refusal(f, spelled));
                    warnings.push_back(spelled + " (" + f.peer + ") ignored: " + f.why);
                },
                help);
            opt->type_name("VALUE VALUE")->expected(2)->allow_extra_args(false);
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
            // llama.cpp takes a repeated flag's last value (with a deprecation warning).
            opt->type_name(f.num_values < 0 ? "[VALUE]" : "VALUE")
                ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
            if (f.num_values < 0) opt->expected(0, 1);
        }
        opt->group(group);
    }
}

}  // namespace lazyattn::cli
