// Corpus files: the documents `lazyattn precompute --corpus` computes and `serve
// --known-documents` indexes, read from operator-named files.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/status.h"

namespace lazyattn::cli {

// One document of a corpus file.
struct CorpusDocument {
    std::string title;
    std::string text;
};

// How much of what a corpus path names is read (serve --known-documents reads operator input
// at start-up: a device or a FIFO named by mistake must not fill memory or block it).
struct CorpusReadLimits {
    bool regular_files_only = false;  // refuse devices, FIFOs, sockets (before opening them)
    size_t max_plain_bytes = 0;       // a plain file longer than this is skipped unread past it (0: no bound)
};

// The documents of one corpus file: a .jsonl/.json file of {"text", "title"} objects (or
// {"documents": [...]}) one a line, or any other file as one document.
Expected<std::vector<CorpusDocument>> read_corpus_documents(const std::string& path,
                                                            const CorpusReadLimits& limits = {});
// Every document of the files, in order (the first file that cannot be read is the error).
Expected<std::vector<CorpusDocument>> read_corpus_files(const std::vector<std::string>& paths);

}  // namespace lazyattn::cli
