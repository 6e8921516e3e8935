#include "server/verbose_reply.h"

#include <memory>

#include "server/serving_front.h"

namespace lazyattn::server {

VerboseReply::VerboseReply(const tokenizer::Tokenizer& tokenizer, std::string model)
    : tokenizer_(tokenizer), model_(std::move(model)) {}

void VerboseReply::prepared(const PreparedRequest& p) {
    NativeOptions options;
    options.return_tokens = true;
    options.stream = p.gen.stream;
    options.n_predict = p.gen.max_tokens;
    NativeContext context;
    context.model = model_;
    context.n_ctx = p.context_length;
    native_ = std::make_unique<NativeRenderer>(tokenizer_, std::move(options), std::move(context));
    native_->prepared(p);
    streamed_.assign(size_t(std::max<int32_t>(1, p.gen.n)), engine::RagResult{});
}

nlohmann::json VerboseReply::whole(const engine::RagResult& result, size_t index) const {
    if (!native_) return nullptr;
    nlohmann::json j = native_->result_json(result);
    j["index"] = index;
    return j;
}

void VerboseReply::token(size_t index, const engine::RequestEvent& e) {
    if (index >= streamed_.size()) return;
    engine::RagResult& r = streamed_[index];
    if (e.token_id >= 0) r.token_ids.push_back(e.token_id);
    r.text += e.text;
}

nlohmann::json VerboseReply::streamed_end(size_t index, const engine::RequestEvent& end,
                                          const engine::RequestStats& stats) const {
    if (index >= streamed_.size()) return nullptr;
    engine::RagResult r = streamed_[index];
    r.finish_reason = end.finish_reason;
    r.stop_word = end.stop_word;
    r.stats = stats;
    return whole(r, index);
}

}  // namespace lazyattn::server
