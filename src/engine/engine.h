// Engine: runs RAG requests on a Model with a paged, content-addressed KV cache, in one of the
// cache modes (lazy by default). A request's segments are looked up one by one (order does not
// affect hits); missing ones are computed as their own sequences from position 0 (block-diagonal)
// and cached; the tail then attends to every segment at its logical offset and to itself.
//
// admit() / decode() / release() are the primitives (tests hold two requests live at once);
// run() composes them into one generation. One thread drives an Engine.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/active_request.h"
#include "engine/engine_config.h"
#include "engine/rag_request.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::engine {

using TextCallback = std::function<void(std::string_view)>;

class Engine {
public:
    Engine(model::Model& model, const tokenizer::Tokenizer& tokenizer, const EngineConfig& config);

    // Generates for one request, streaming text to on_text as it forms.
    Expected<RagResult> run(const RagRequest& request, const TextCallback& on_text = {});
    // Logits at every tail position of the prompt ([tail.size(), vocab]).
    Expected<std::vector<float>> tail_logits(const RagRequest& request);

    // Validates, acquires every segment's KV (computing the missing ones), prefills the tail;
    // last_logits then predicts the first generated token. On error nothing stays held.
    Expected<ActiveRequest> admit(const RagRequest& request, bool all_tail_logits = false,
                                  std::vector<float>* tail_logits = nullptr);
    // Appends `token` to the tail and computes it.
    Status decode(ActiveRequest& request, int32_t token);
    // Returns every block reference the request holds (cached content stays cached).
    void release(ActiveRequest& request);

    const EngineConfig& config() const { return config_; }
    const kv::KvCache& kv_cache() const { return kv_; }
    const model::ModelConfig& model_config() const { return model_.config(); }
    void check_integrity() const { kv_.check_integrity(); }

private:
    Status validate_request(const RagRequest& request) const;
    Status acquire_segments(const RagRequest& request, ActiveRequest& ar);
    Status compute_segments(std::vector<SegmentPlacement*>& jobs, std::vector<const std::vector<int32_t>*>& tokens,
                            std::vector<int32_t>& num_cached);
    Status materialize_copies(ActiveRequest& ar);
    Status prepare_tail(const RagRequest& request, ActiveRequest& ar);
    Status compute_tail(ActiveRequest& ar, int32_t end, bool all_logits, std::vector<float>* logits);
    Status ensure_tail_blocks(ActiveRequest& ar, int32_t num_tokens);
    Status forward(const model::ForwardBatch& batch, std::vector<float>* logits);
    void after_step(ActiveRequest& ar);

    model::Model& model_;
    const tokenizer::Tokenizer& tokenizer_;
    EngineConfig config_;
    kv::KvCache kv_;
    kv::BlockHash segment_seed_;  // model + KV variant: where a segment sits never enters
    kv::BlockHash tail_seed_;     // combined with the segment list per request
    kv::BlockHash prefix_seed_;
};

}  // namespace lazyattn::engine
