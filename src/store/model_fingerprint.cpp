#include "store/model_fingerprint.h"

#include <xxhash.h>

namespace lazyattn::store {

Fingerprint model_fingerprint(const model::Model& model) {
    XXH3_state_t* st = XXH3_createState();
    XXH3_128bits_reset(st);
    const std::string arch = model.config().describe();
    XXH3_128bits_update(st, arch.data(), arch.size() + 1);
    const loader::GgufFile& file = model.gguf();
    for (const loader::GgufTensorInfo& t : file.tensors()) {
        XXH3_128bits_update(st, t.name.data(), t.name.size() + 1);
        const uint32_t type = uint32_t(t.type);
        XXH3_128bits_update(st, &type, sizeof type);
        XXH3_128bits_update(st, t.dims.data(), t.dims.size() * sizeof(int64_t));
        XXH3_128bits_update(st, file.tensor_data(t), size_t(t.num_bytes));
    }
    const XXH128_hash_t d = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    return {d.low64, d.high64};
}

}  // namespace lazyattn::store
