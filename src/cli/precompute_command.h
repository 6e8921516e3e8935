// `lazyattn precompute`: computes every document of a corpus into the persistent store
// (--kv-store), so that serving replicas load them instead of prefilling. Documents are
// tokenized exactly as requests tokenize them (engine::document_tokens), so every later request
// naming the same passage hits; documents already in the store are skipped. The work is
// ServingEngine::precompute's, the one precompute path; the corpus reader is cli/corpus.h.
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

}  // namespace lazyattn::cli
