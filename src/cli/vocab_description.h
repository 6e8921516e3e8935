// One line naming a GGUF file's vocabulary for `lazyattn info`: the tokenizer type, its
// pre-tokenizer, size and BOS rule, or why lazyattn refuses it.
#pragma once

#include <string>

namespace lazyattn::loader {
class GgufFile;
}

namespace lazyattn::cli {

std::string describe_vocabulary(const loader::GgufFile& file);

}  // namespace lazyattn::cli
