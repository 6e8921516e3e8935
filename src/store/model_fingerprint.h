// A model's identity for the segment store: XXH3-128 over the architecture description
// (ModelConfig::describe()), then every GGUF tensor's name, type, dimensions and ALL of its
// bytes (the full data, not a sample: two files that would compute different KV never share a
// fingerprint; metadata that does not change the computation, e.g. the file's name, is ignored). Hashing is ~10-20 GB/s (XXH3), so a 1B F16 model
// costs ~0.2 s, computed once when an engine opens a store.
#pragma once

#include "model/model.h"
#include "store/segment_format.h"

namespace lazyattn::store {

Fingerprint model_fingerprint(const model::Model& model);

}  // namespace lazyattn::store
