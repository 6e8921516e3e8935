// The GGUF metadata key a block fine-tuned model carries (scripts/finetune/, docs/finetune.md):
// `lazyattn.block_finetuned` = "plain" (trained with every document encoded alone, as `lazy`
// encodes them) or "anchored" (trained with every document encoded after the preamble, as
// `document_reuse: anchor` encodes them). `lazyattn info` prints it and `lazyattn serve` takes
// its default document_reuse from it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/request/document_reuse.h"
#include "loader/gguf_file.h"

namespace lazyattn::engine {

inline constexpr std::string_view kBlockFinetunedKey = "lazyattn.block_finetuned";

// nullopt when the file has no such key; kInvalidArgument naming the value when it is not a
// string "plain" or "anchored".
Expected<std::optional<std::string>> block_finetuned_layout(const loader::GgufFile& file);

// How requests that do not say read cached documents on this model: anchor for a model
// block fine-tuned "anchored", plain otherwise.
Expected<DocumentReuse> model_default_document_reuse(const loader::GgufFile& file);

}  // namespace lazyattn::engine
