// Synthetic models at real shapes, generated in memory: `--model synthetic:NAME[:TYPE][:seed=N]`
// gives every command a Llama-3.2-1B, Llama-3.1-8B or Qwen2-7B sized model without a weight file,
// so CPU and GPU benchmarks run at realistic sizes. The weights are random (deterministic from
// the seed, whatever the thread count); the tokenizer is the embedded SmolLM2's, its vocabulary
// padded with "<oov_ID>" tokens up to the preset's (ids the tokenizer never produces: sampled,
// they detokenize to that text).
//
// The model is built as a GGUF image in an anonymous in-memory file (memfd), written once and
// opened by the ordinary loader through /proc/self/fd, so nothing reaches the disk and the
// weights are held once (the loader maps the same pages).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "loader/ggml_type.h"

namespace lazyattn::loader {
class GgufFile;
}  // namespace lazyattn::loader

namespace lazyattn::synthetic {

struct SyntheticPreset {
    std::string name;  // "llama-1b"
    std::string like;  // the model whose shape it has
    std::string arch;  // "llama" or "qwen2"
    int32_t num_layers;
    int32_t hidden;
    int32_t num_heads;
    int32_t num_kv_heads;
    int32_t head_dim;
    int32_t ffn;
    int32_t vocab_size;
    int32_t context_length;
    float rope_freq_base;
    bool tied_embeddings;

    // Parameters of the matrices (embeddings included).
    int64_t num_parameters() const;
};

// llama-1b, llama-8b, qwen-7b, and tiny (2 layers, for tests).
const std::vector<SyntheticPreset>& synthetic_presets();

struct SyntheticSpec {
    SyntheticPreset preset;
    loader::GgmlType weight_type = loader::GgmlType::kQ4_K;  // the CPU's fast decode type
    uint64_t seed = 1;
    std::string canonical() const;  // "synthetic:llama-1b:Q4_K:seed=1"
};

inline constexpr std::string_view kSyntheticPrefix = "synthetic:";
inline bool is_synthetic_model(std::string_view model) {
    return model.substr(0, kSyntheticPrefix.size()) == kSyntheticPrefix;
}

// Parses "synthetic:NAME[:TYPE][:seed=N]" (TYPE: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1,
// q2_k..q6_k, any case). kInvalidArgument naming the presets or types for an unknown one.
Expected<SyntheticSpec> parse_synthetic_spec(std::string_view model);

// The GGUF image of `spec` in an in-memory file, with the tokenizer metadata of
// `tokenizer_source`; weights generated on `num_threads` threads (0: all cores), with a progress
// bar on a terminal. Returns the path to open it by ("/proc/self/fd/N"); the image lives until
// the process exits, and the same spec asked for again returns the same path.
Expected<std::string> materialize_synthetic_model(const SyntheticSpec& spec, const loader::GgufFile& tokenizer_source,
                                                  int num_threads);

// The file a --model argument names: "" stays "" (the caller's default), a synthetic spec is
// materialized (its tokenizer from the GGUF at `tokenizer_path`, normally the embedded model),
// anything else is returned as given.
Expected<std::string> resolve_model_source(const std::string& model, const std::string& tokenizer_path,
                                           int num_threads);

// Writes a vocabulary-only GGUF (general.architecture and the tokenizer.* metadata of `source`,
// no tensors) to `path`: a few MiB that serve as a synthetic model's tokenizer on a machine
// without the embedded model (the GPU bundle carries one, scripts/build_gpu_bundle.sh).
Status write_vocabulary_gguf(const loader::GgufFile& source, const std::string& path);

}  // namespace lazyattn::synthetic
