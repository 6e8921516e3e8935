#include "engine/engine.h"

#include <algorithm>

#include "core/check.h"
#include "core/timer.h"
#include "engine/sampler.h"
#include "engine/stop_matcher.h"

namespace lazyattn::engine {

Status EngineConfig::validate() const {
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

Engine::Engine(model::Model& model, const tokenizer::Tokenizer& tokenizer, const EngineConfig& config)
    : model_(model),
      tokenizer_(tokenizer),
      config_(config),
      kv_(kv_shape_for(model.config(), config.block_size, int64_t(config.kv_cache_mb) << 20)) {
    const std::string fingerprint = model.config().describe();
    const bool rotated = keys_stored_rotated(config.cache_mode);
    segment_seed_ = kv::hash_seed(rotated ? "segment/rotated" : "segment/raw", fingerprint);
    tail_seed_ = kv::hash_seed(rotated ? "tail/rotated" : "tail/raw", fingerprint);
    prefix_seed_ = kv::hash_seed("prefix", fingerprint);
}

Status Engine::validate_request(const RagRequest& r) const {
    const int32_t vocab = model_.config().vocab_size, ctx = model_.config().context_length;
    if (r.tail.empty()) return invalid_argument("the request has no tail (question) tokens");
    int64_t total = int64_t(r.tail.size());
    for (const auto& s : r.segments) total += int64_t(s.size());
    if (total >= ctx) {
        return out_of_range("prompt of " + std::to_string(total) + " tokens (documents and question) leaves no room in the context length " +
                            std::to_string(ctx));
    }
    auto bad_token = [vocab](const std::vector<int32_t>& t) {
        return std::any_of(t.begin(), t.end(), [vocab](int32_t x) { return x < 0 || x >= vocab; });
    };
    if (bad_token(r.tail)) return invalid_argument("token id outside the vocabulary in the tail");
    for (const auto& s : r.segments) {
        if (bad_token(s)) return invalid_argument("token id outside the vocabulary in a segment");
    }
    if (r.max_tokens < 0) return invalid_argument("max_tokens must be >= 0");
    return r.sampling.validate();
}

Status Engine::forward(const model::ForwardBatch& batch, std::vector<float>* logits) {
    LA_RETURN_IF_ERROR(model_.forward(batch, kv_.storage(), logits));
    if (config_.check_integrity) kv_.check_integrity();
    return {};
}

void Engine::after_step(ActiveRequest& ar) {
    ar.stats.peak_blocks = std::max(ar.stats.peak_blocks, kv_.num_used());
}

Expected<ActiveRequest> Engine::admit(const RagRequest& request, bool all_tail_logits, std::vector<float>* tail_logits) {
    LA_RETURN_IF_ERROR(validate_request(request));
    ActiveRequest ar;
    ar.stats.num_prompt_tokens = request.num_prompt_tokens();
    Status st = acquire_segments(request, ar);
    if (st.ok()) st = prepare_tail(request, ar);
    std::vector<float> logits;
    if (st.ok()) st = compute_tail(ar, ar.num_prompt_tail, all_tail_logits, &logits);
    if (!st.ok()) {
        release(ar);
        return st;
    }
    if (config_.cache_mode != CacheMode::kNone) {
        kv_.publish(config_.cache_mode == CacheMode::kPrefix ? prefix_seed_ : kv::hash_segment_list(tail_seed_, request.segments),
                    ar.tail_tokens, ar.tail_blocks, false);
    }
    const int32_t vocab = model_.config().vocab_size;
    ar.last_logits.assign(logits.end() - vocab, logits.end());
    if (tail_logits != nullptr) *tail_logits = std::move(logits);
    return ar;
}

Status Engine::decode(ActiveRequest& ar, int32_t token) {
    if (token < 0 || token >= model_.config().vocab_size) return invalid_argument("token outside the vocabulary");
    if (ar.next_position() >= model_.config().context_length) return out_of_range("context length reached");
    ar.tail_tokens.push_back(token);
    std::vector<float> logits;
    LA_RETURN_IF_ERROR(compute_tail(ar, int32_t(ar.tail_tokens.size()), false, &logits));
    ar.last_logits = std::move(logits);
    return {};
}

void Engine::release(ActiveRequest& ar) {
    kv_.release(ar.held);
    ar.held.clear();
    ar.segments.clear();
    ar.tail_blocks.clear();
    if (config_.check_integrity) kv_.check_integrity();
}

Expected<std::vector<float>> Engine::tail_logits(const RagRequest& request) {
    std::vector<float> logits;
    LA_ASSIGN_OR_RETURN(ActiveRequest ar, admit(request, true, &logits));
    release(ar);
    return logits;
}

Expected<RagResult> Engine::run(const RagRequest& request, const TextCallback& on_text) {
    const double t_start = now_ms();
    LA_ASSIGN_OR_RETURN(ActiveRequest ar, admit(request));
    RagResult result;
    result.finish_reason = "length";
    const int32_t vocab = model_.config().vocab_size, ctx = model_.config().context_length;
    std::vector<int32_t> history;
    for (const auto& s : request.segments) history.insert(history.end(), s.begin(), s.end());
    history.insert(history.end(), request.tail.begin(), request.tail.end());

    Sampler sampler(request.sampling);
    tokenizer::StreamDecoder decoder(tokenizer_);
    StopMatcher stops(request.stop);
    auto emit = [&](const std::string& text) {
        if (text.empty()) return;
        result.text += text;
        if (on_text) on_text(text);
    };
    double t_first = now_ms();
    Status st;
    while (int32_t(result.token_ids.size()) < request.max_tokens) {
        const int32_t token = sampler.sample(ar.last_logits.data(), vocab, history);
        if (result.token_ids.empty()) t_first = now_ms();
        result.token_ids.push_back(token);
        history.push_back(token);
        if (!request.ignore_eos && tokenizer_.is_end_of_generation(token)) {
            result.finish_reason = "stop";
            break;
        }
        emit(stops.push(decoder.push(token)));
        if (stops.stopped()) {
            result.finish_reason = "stop";
            break;
        }
        if (int32_t(result.token_ids.size()) >= request.max_tokens || ar.next_position() >= ctx) break;
        st = decode(ar, token);
        if (!st.ok()) break;
    }
    after_step(ar);
    result.stats = ar.stats;
    release(ar);
    if (!st.ok()) return st;
    if (!stops.stopped()) emit(stops.push(decoder.flush()) + stops.flush());

    const double t_end = now_ms();
    RequestStats& s = result.stats;
    s.num_generated = int32_t(result.token_ids.size());
    s.ttft_ms = (result.token_ids.empty() ? t_end : t_first) - t_start;
    s.decode_ms = result.token_ids.empty() ? 0.0 : t_end - t_first;
    const int32_t decoded = std::max(0, s.num_generated - 1);
    s.decode_tok_per_s = s.decode_ms > 0 ? 1000.0 * decoded / s.decode_ms : 0.0;
    return result;
}

}  // namespace lazyattn::engine
