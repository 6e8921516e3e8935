// The GGUF metadata key a block fine-tuned model carries (scripts/finetune/, docs/finetune.md):
// `lazyattn.block_finetuned` = "plain" (trained with every document encoded alone, as `lazy`
// encodes them) or "anchored" (trained with every document encoded after the preamble, as
// `document_reuse: anchor` encodes them). `lazyattn info` prints it, and a server, benchmark or
// Python LLM that names no preset and no document reuse serves such a model as it was trained
// (model_serving_default).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/request/document_reuse.h"
#include "engine/request/quality_preset.h"
#include "loader/gguf_file.h"

namespace lazyattn::engine {

inline constexpr std::string_view kBlockFinetunedKey = "lazyattn.block_finetuned";

// nullopt when the file has no such key; kInvalidArgument naming the value when it is not a
// string "plain" or "anchored".
Expected<std::optional<std::string>> block_finetuned_layout(const loader::GgufFile& file);

// What a server that names neither --quality nor --document-reuse runs on this model: a block
// fine-tuned model's own layout (plain, or anchor for "anchored") under the fast preset, as it
// was trained to read its documents; any other model the default preset (kDefaultQualityPreset)
// and its document reuse. The one place this rule is written: serve, the Python LLM and `bench
// quality`'s MODE:default variants all take it from here.
struct ServingDefault {
    QualityPreset preset = kDefaultQualityPreset;
    DocumentReuse reuse;
    bool models_own = false;  // the model's block_finetuned layout decided it
};
Expected<ServingDefault> model_serving_default(const loader::GgufFile& file);

}  // namespace lazyattn::engine
