// Generator: runs one request at a time on a Model: chunked prefill of the prompt, then decode,
// streaming text as it forms. The KV cache is paged (a block table per sequence) from the start.
// The multi-request engine with segment caching builds on the same pieces.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/sampling_params.h"
#include "kv/block_pool.h"
#include "kv/kv_storage.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::engine {

struct GeneratorConfig {
    int32_t block_size = 16;
    int32_t kv_cache_mb = 512;       // KV pool size; enough for the context length is the default
    int32_t max_batch_tokens = 512;  // prefill chunk size

    Status validate() const;
};

struct GenerateRequest {
    std::vector<int32_t> prompt;
    SamplingParams sampling;
    int32_t max_tokens = 128;
    std::vector<std::string> stop;  // stop strings (not included in the output)
    bool ignore_eos = false;
};

struct GenerateResult {
    std::vector<int32_t> token_ids;  // generated tokens (an end-of-generation token included)
    std::string text;                // generated text, up to a stop string
    std::string finish_reason;       // "stop" (EOS or stop string) or "length"
    int32_t num_prompt_tokens = 0;
    double ttft_ms = 0;              // start to first sampled token
    double decode_ms = 0;            // first token to last
    double decode_tok_per_s = 0;
};

using TextCallback = std::function<void(std::string_view)>;

class Generator {
public:
    Generator(model::Model& model, const tokenizer::Tokenizer& tokenizer, const GeneratorConfig& config);

    Expected<GenerateResult> generate(const GenerateRequest& request, const TextCallback& on_text = {});
    // Logits at every prompt position ([n, vocab]), for comparisons with a reference.
    Expected<std::vector<float>> prompt_logits(const std::vector<int32_t>& prompt);

    const kv::BlockPool& block_pool() const { return pool_; }

private:
    // Computes tokens [start, start + n) of `tokens` into `blocks` (grown as needed), in chunks.
    Status prefill(const std::vector<int32_t>& tokens, int32_t start, std::vector<int32_t>& blocks,
                   bool all_logits, std::vector<float>* logits);
    Status ensure_blocks(std::vector<int32_t>& blocks, int32_t num_tokens);

    model::Model& model_;
    const tokenizer::Tokenizer& tokenizer_;
    GeneratorConfig config_;
    kv::BlockPool pool_;
    kv::KvStorage storage_;
};

kv::KvShape kv_shape_for(const model::ModelConfig& model, int32_t block_size, int64_t pool_bytes);

}  // namespace lazyattn::engine
