#include "engine/generator.h"

#include <algorithm>

#include "core/timer.h"
#include "engine/batch_builder.h"
#include "engine/sampler.h"
#include "engine/stop_matcher.h"

namespace lazyattn::engine {

Status GeneratorConfig::validate() const {
    if (block_size <= 0 || block_size > 1024) return invalid_argument("block size must be in [1, 1024]");
    if (kv_cache_mb <= 0) return invalid_argument("KV cache size must be positive");
    if (max_batch_tokens <= 0) return invalid_argument("max batch tokens must be positive");
    return {};
}

kv::KvShape kv_shape_for(const model::ModelConfig& model, int32_t block_size, int64_t pool_bytes) {
    kv::KvShape shape;
    shape.num_layers = model.num_layers;
    shape.num_kv_heads = model.num_kv_heads;
    shape.head_dim = model.head_dim;
    shape.block_size = block_size;
    shape.num_blocks = int32_t(std::max<int64_t>(1, pool_bytes / shape.bytes_per_block()));
    return shape;
}

Generator::Generator(model::Model& model, const tokenizer::Tokenizer& tokenizer,
                     const GeneratorConfig& config)
    : model_(model),
      tokenizer_(tokenizer),
      config_(config),
      pool_(kv_shape_for(model.config(), config.block_size, int64_t(config.kv_cache_mb) << 20).num_blocks),
      storage_(kv_shape_for(model.config(), config.block_size, int64_t(config.kv_cache_mb) << 20)) {}

Status Generator::ensure_blocks(std::vector<int32_t>& blocks, int32_t num_tokens) {
    const int32_t need = (num_tokens + config_.block_size - 1) / config_.block_size - int32_t(blocks.size());
    if (need <= 0) return {};
    LA_ASSIGN_OR_RETURN(auto fresh, pool_.allocate(need));
    blocks.insert(blocks.end(), fresh.begin(), fresh.end());
    return {};
}

Status Generator::prefill(const std::vector<int32_t>& tokens, int32_t start, std::vector<int32_t>& blocks,
                          bool all_logits, std::vector<float>* logits) {
    logits->clear();
    std::vector<float> step_logits;
    for (int32_t begin = start; begin < int32_t(tokens.size()); begin += config_.max_batch_tokens) {
        const int32_t end = std::min<int32_t>(int32_t(tokens.size()), begin + config_.max_batch_tokens);
        LA_RETURN_IF_ERROR(ensure_blocks(blocks, end));
        model::ForwardBatch batch;
        const bool last_chunk = end == int32_t(tokens.size());
        add_plain_sequence(batch, {tokens.begin() + begin, tokens.begin() + end}, begin, blocks,
                           config_.block_size, all_logits ? 2 : (last_chunk ? 1 : 0));
        LA_RETURN_IF_ERROR(model_.forward(batch, storage_, &step_logits));
        logits->insert(logits->end(), step_logits.begin(), step_logits.end());
    }
    return {};
}

Expected<std::vector<float>> Generator::prompt_logits(const std::vector<int32_t>& prompt) {
    if (prompt.empty()) return invalid_argument("empty prompt");
    if (int32_t(prompt.size()) > model_.config().context_length) {
        return out_of_range("prompt of " + std::to_string(prompt.size()) + " tokens exceeds the context length " +
                            std::to_string(model_.config().context_length));
    }
    std::vector<int32_t> blocks;
    std::vector<float> logits;
    Status st = prefill(prompt, 0, blocks, true, &logits);
    pool_.unref_all(blocks);
    if (!st.ok()) return st;
    return logits;
}

Expected<GenerateResult> Generator::generate(const GenerateRequest& req, const TextCallback& on_text) {
    LA_RETURN_IF_ERROR(req.sampling.validate());
    const int32_t ctx = model_.config().context_length;
    const int32_t vocab = model_.config().vocab_size;
    if (req.prompt.empty()) return invalid_argument("empty prompt");
    if (req.max_tokens < 0) return invalid_argument("max_tokens must be >= 0");
    if (int32_t(req.prompt.size()) >= ctx) {
        return out_of_range("prompt of " + std::to_string(req.prompt.size()) +
                            " tokens leaves no room in the context length " + std::to_string(ctx));
    }
    GenerateResult result;
    result.num_prompt_tokens = int32_t(req.prompt.size());
    result.finish_reason = "length";
    const double t_start = now_ms();

    std::vector<int32_t> blocks;
    std::vector<int32_t> history = req.prompt;
    std::vector<float> logits;
    Status st = prefill(history, 0, blocks, false, &logits);

    Sampler sampler(req.sampling);
    tokenizer::StreamDecoder decoder(tokenizer_);
    StopMatcher stops(req.stop);
    auto emit = [&](const std::string& text) {
        if (text.empty()) return;
        result.text += text;
        if (on_text) on_text(text);
    };
    double t_first = t_start;
    while (st.ok() && int32_t(result.token_ids.size()) < req.max_tokens) {
        const int32_t token = sampler.sample(logits.data(), vocab, history);
        if (result.token_ids.empty()) t_first = now_ms();
        result.token_ids.push_back(token);
        history.push_back(token);
        if (!req.ignore_eos && tokenizer_.is_end_of_generation(token)) {
            result.finish_reason = "stop";
            break;
        }
        emit(stops.push(decoder.push(token)));
        if (stops.stopped()) {
            result.finish_reason = "stop";
            break;
        }
        if (int32_t(history.size()) >= ctx || int32_t(result.token_ids.size()) >= req.max_tokens) break;
        st = prefill(history, int32_t(history.size()) - 1, blocks, false, &logits);
    }
    pool_.unref_all(blocks);
    if (!st.ok()) return st;
    if (!stops.stopped()) emit(stops.push(decoder.flush()) + stops.flush());

    const double t_end = now_ms();
    result.ttft_ms = (result.token_ids.empty() ? t_end : t_first) - t_start;
    result.decode_ms = result.token_ids.empty() ? 0.0 : t_end - t_first;
    const size_t n_decoded = result.token_ids.size() > 1 ? result.token_ids.size() - 1 : 0;
    result.decode_tok_per_s = result.decode_ms > 0 ? 1000.0 * double(n_decoded) / result.decode_ms : 0.0;
    return result;
}

}  // namespace lazyattn::engine
