// Reads the tokenizer.ggml.* metadata of a GGUF file into VocabData. Absent optional keys stay
// empty; a key present with the wrong type is an error (kCorrupt from the reader).
#pragma once

#include "core/status.h"
#include "tokenizer/vocab.h"

namespace lazyattn::loader {
class GgufFile;
}

namespace lazyattn::tokenizer {

Expected<VocabData> read_vocab_data(const loader::GgufFile& file);

}  // namespace lazyattn::tokenizer
