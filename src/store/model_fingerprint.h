// A model's identity for the segment store: XXH3-128 over every field of its ModelConfig (each
// hashed as itself: floats as bit patterns, vectors whole, strings and enums), then every GGUF
// tensor's name, type, dimensions and ALL of its bytes (the full data, not a sample). Two files
// that would compute different KV never share a fingerprint; what does not change the
// computation (the file's path; metadata the config does not read, such as the tokenizer or the
// `lazyattn.block_finetuned` label, which only picks a request default) is ignored. Hashing is
// ~10-20 GB/s (XXH3), so a 1B F16 model costs ~0.2 s, computed once when an engine opens a store.
//
// The config is hashed field by field, not through ModelConfig::describe(): that text rounds
// floats to 6 significant digits and summarises vectors, so a model whose rope base differs by
// 0.4 used to share the fingerprint, and read another model's KV.
#pragma once

#include <cstddef>
#include <utility>

#include "model/model.h"
#include "store/segment_format.h"

namespace lazyattn::store {

Fingerprint model_fingerprint(const model::Model& model);
// The config's part alone (model_fingerprint covers it): for tests.
Fingerprint config_fingerprint(const model::ModelConfig& config);

namespace detail {
// The number of fields of aggregate T: the most initializers T{...} takes (each field is
// initialized by one AnyField, never elided into a nested aggregate's fields).
struct AnyField {
    template <class T>
    operator T() const;  // unevaluated only
};
template <class T, size_t... I>
constexpr bool takes_initializers(std::index_sequence<I...>) {
    return requires { T{(void(I), AnyField{})...}; };
}
template <class T, size_t N = 0>
constexpr size_t field_count() {
    if constexpr (takes_initializers<T>(std::make_index_sequence<N + 1>{})) {
        return field_count<T, N + 1>();
    } else {
        return N;
    }
}
}  // namespace detail

}  // namespace lazyattn::store
