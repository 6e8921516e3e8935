// la_extract_vocabulary: writes the vocabulary of a GGUF model (general.architecture and its
// tokenizer.* metadata, no tensors) to a small GGUF of its own. The GPU bundle carries SmolLM2's
// this way (a few MiB instead of the 94 MiB model) as the tokenizer of synthetic models.
//
//   la_extract_vocabulary models/SmolLM2-135M-Instruct.Q4_1.gguf gpu_bundle/vocab.gguf
#include <cstdio>

#include "loader/gguf_file.h"
#include "synthetic/synthetic_preset.h"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s MODEL.gguf OUT.gguf\n", argv[0]);
        return 2;
    }
    auto source = lazyattn::loader::GgufFile::open(argv[1]);
    if (!source.ok()) {
        std::fprintf(stderr, "%s\n", source.status().to_string().c_str());
        return 1;
    }
    const lazyattn::Status st = lazyattn::synthetic::write_vocabulary_gguf(**source, argv[2]);
    if (!st.ok()) {
        std::fprintf(stderr, "%s\n", st.to_string().c_str());
        return 1;
    }
    return 0;
}
