#include "server/serving_stack.h"

#include "engine/loading/block_finetune.h"

namespace lazyattn::server {

Expected<ServingStack> open_serving_stack(const ServingStackOptions& o) {
    ServingStack stack;
    if (!o.quality.empty()) {
        const auto preset = engine::parse_quality_preset(o.quality);
        if (!preset) return invalid_argument("quality: '" + o.quality + "' is none of fast, balanced, accurate");
        stack.quality = *preset;
    }
    engine::EngineConfig config = o.engine;
    config.condition_after = o.condition_after >= 0 ? o.condition_after : engine::preset_condition_after(stack.quality);
    stack.reuse_is_models_default = o.document_reuse.empty() && stack.quality == engine::QualityPreset::kFast;
    if (o.document_reuse.empty() && !stack.reuse_is_models_default) {
        stack.default_reuse = engine::preset_document_reuse(stack.quality);
    }
    if (!o.document_reuse.empty()) {
        auto reuse = engine::parse_document_reuse(o.document_reuse);
        if (!reuse.ok()) return invalid_argument("document_reuse: " + reuse.status().message());
        stack.default_reuse = *reuse;
    }
    LA_ASSIGN_OR_RETURN(stack.lm, engine::load_model(o.model_path, o.device, o.num_threads));
    if (stack.reuse_is_models_default) {
        // Not said: the model's own (a block fine-tuned model names the layout it was trained for).
        LA_ASSIGN_OR_RETURN(stack.default_reuse, engine::model_default_document_reuse(stack.lm.model->gguf()));
    }
    auto chat = tokenizer::select_chat_template(o.chat_template, stack.lm.model->gguf());
    if (!chat.ok()) return invalid_argument("chat_template: " + chat.status().message());
    stack.chat = std::move(chat).value();
    LA_ASSIGN_OR_RETURN(stack.engine, engine::ServingEngine::create(*stack.lm.model, *stack.lm.tokenizer, config));
    return stack;
}

}  // namespace lazyattn::server
