#include "engine/loading/block_finetune.h"

#include "core/utf8.h"

namespace lazyattn::engine {

Expected<std::optional<std::string>> block_finetuned_layout(const loader::GgufFile& file) {
    if (file.metadata().find(kBlockFinetunedKey) == file.metadata().end()) return std::optional<std::string>{};
    auto v = file.get_string(kBlockFinetunedKey);
    if (!v.ok()) return invalid_argument(std::string(kBlockFinetunedKey) + " must be a string (plain or anchored)");
    if (*v != "plain" && *v != "anchored") {
        std::string m(kBlockFinetunedKey);
        m += " is '" + text::clip_for_message(*v);
        m += "'; it must be plain or anchored";
        return invalid_argument(std::move(m));
    }
    return std::optional<std::string>(*v);
}

Expected<ServingDefault> model_serving_default(const loader::GgufFile& file) {
    LA_ASSIGN_OR_RETURN(auto layout, block_finetuned_layout(file));
    ServingDefault d;
    if (layout) {
        d.preset = QualityPreset::kFast;
        d.reuse.anchored = *layout == "anchored";
        d.models_own = true;
    } else {
        d.reuse = preset_document_reuse(d.preset);
    }
    return d;
}

}  // namespace lazyattn::engine
