// ServingStack: what `lazyattn serve` and the Python LLM both start before answering anything:
// the model (weights, tokenizer, backend), its chat template, the document reuse that requests
// which do not say get, and the serving engine. One start-up for both, so a setting means the
// same in either and a new one is wired once.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "backend/device.h"
#include "core/status.h"
#include "engine/engine_config.h"
#include "engine/loading/loaded_model.h"
#include "engine/request/document_reuse.h"
#include "engine/request/quality_preset.h"
#include "engine/serving_engine.h"
#include "tokenizer/chat_template.h"

namespace lazyattn::server {

struct ServingStackOptions {
    std::string model_path;
    backend::Device device;
    int num_threads = 0;  // 0: the machine's
    engine::EngineConfig engine;
    std::string chat_template;   // "": the model file's (tokenizer::select_chat_template)
    std::string document_reuse;  // "": the preset's (engine::model_serving_default when neither is said)
    // "fast", "balanced" or "accurate" (engine/request/quality_preset.h); "": the model's
    // default (engine::model_serving_default: balanced, or a block fine-tuned model's own layout
    // under fast). Sets the default document reuse when document_reuse is not given, and the
    // background work.
    std::string quality;
    int32_t condition_after = -1;  // EngineConfig::condition_after; -1: the preset's
};

struct ServingStack {
    engine::LoadedModel lm;
    std::optional<tokenizer::ChatTemplate> chat;  // nullopt: the model has none (chat requests get 400)
    engine::DocumentReuse default_reuse;
    engine::QualityPreset quality = engine::QualityPreset::kFast;
    bool reuse_is_models_default = false;  // neither was said, and the model's fine-tuned layout decided
    std::unique_ptr<engine::ServingEngine> engine;
};

// kInvalidArgument (naming the option: "document_reuse: ...", "quality: ...", "chat_template: ...") for a bad
// setting, before the model is loaded where the setting alone shows it; the loader's or the
// engine's status otherwise (a missing file, a KV pool larger than memory).
Expected<ServingStack> open_serving_stack(const ServingStackOptions& options);

}  // namespace lazyattn::server
