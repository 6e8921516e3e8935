// `lazyattn precompute`: computes every document of a corpus into the persistent store
// (--kv-store), so that serving replicas load them instead of prefilling. Documents are
// tokenized exactly as requests tokenize them (engine::format_document, no special tokens), so
// every later request naming the same passage hits; documents already in the store are skipped.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace lazyattn::cli {

struct PrecomputeOptions {
    CommonOptions common;
    // JSON lines (a "documents" array of {title, text} per line, as data/, or one {title?, text}
    // per line) or plain text files (each file one document).
    std::vector<std::string> corpus_files;
    // Whose documents, as the server sees its clients: the API key they present and the
    // cache_salt they send (both empty: the shared tenant of keyless, saltless requests).
    std::string api_key;
    std::string cache_salt;
    std::string cache_mode = "lazy";  // lazy and block-attn share entries; lazy-k has its own
    int32_t kv_cache_mb = 512;
    int32_t max_batch_tokens = 512;
    int32_t batch_docs = 16;  // documents per engine request (computed as parallel segment jobs)
    // K > 0: each document's copy conditioned on its K most similar documents of the corpus
    // (engine::DocumentReuse::neighbours; what requests with document_reuse "neighbours=K" read),
    // instead of its plain copy.
    int32_t neighbours = 0;
    // A tier that cannot be reached at start-up: "stop" (exit 1 before computing anything) or
    // "skip" (fill the other tiers).
    std::string unreachable_tier = "stop";
};

CLI::App* add_precompute_command(CLI::App& app, PrecomputeOptions& o);
int run_precompute(const PrecomputeOptions& o);

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
// The same, formatted as requests format them.
Expected<std::vector<std::string>> read_corpus(const std::string& path);

}  // namespace lazyattn::cli
