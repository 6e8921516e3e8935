#include "server/serving_stack.h"

#include "engine/loading/block_finetune.h"

namespace lazyattn::server {

Expected<ServingStack> open_serving_stack(const ServingStackOptions& o) {
    ServingStack stack;
    std::optional<engine::QualityPreset> preset;  // nullopt: not said
    if (!o.quality.empty()) {
        preset = engine::parse_quality_preset(o.quality);
        if (!preset) return invalid_argument("quality: '" + o.quality + "' is none of fast, balanced, accurate");
    }
    std::optional<engine::DocumentReuse> reuse;  // nullopt: not said
    if (!o.document_reuse.empty()) {
        auto r = engine::parse_document_reuse(o.document_reuse);
        if (!r.ok()) return invalid_argument("document_reuse: " + r.status().message());
        reuse = *r;
    }
    LA_ASSIGN_OR_RETURN(stack.lm, engine::load_model(o.model_path, o.device, o.num_threads));
    // Neither said: the model's default (a block fine-tuned model's own layout under fast, as it
    // was trained to read its documents; else the default preset). Fast said on such a model
    // reads them that way too. The model's metadata is read only where it decides something.
    stack.quality = preset.value_or(engine::kDefaultQualityPreset);
    if (!reuse && (!preset || *preset == engine::QualityPreset::kFast)) {
        LA_ASSIGN_OR_RETURN(const auto model_default, engine::model_serving_default(stack.lm.model->gguf()));
        if (!preset) stack.quality = model_default.preset;
        if (model_default.models_own) {
            stack.default_reuse = model_default.reuse;
            stack.reuse_is_models_default = true;
        }
    }
    if (reuse) {
        stack.default_reuse = *reuse;
    } else if (!stack.reuse_is_models_default) {
        stack.default_reuse = engine::preset_document_reuse(stack.quality);
    }
    engine::EngineConfig config = o.engine;
    config.condition_after = o.condition_after >= 0 ? o.condition_after : engine::preset_condition_after(stack.quality);
    auto chat = tokenizer::select_chat_template(o.chat_template, stack.lm.model->gguf());
    if (!chat.ok()) return invalid_argument("chat_template: " + chat.status().message());
    stack.chat = std::move(chat).value();
    LA_ASSIGN_OR_RETURN(stack.engine, engine::ServingEngine::create(*stack.lm.model, *stack.lm.tokenizer, config));
    return stack;
}

}  // namespace lazyattn::server
