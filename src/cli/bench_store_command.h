// `lazyattn bench store`: what a persistent KV store tier is worth, as a user feels it. The TTFT
// of one k-document request whose documents come from each source, measured side by side in one
// run (interleaved, one engine per source over the same loaded model): recomputed, the RAM pool
// (in another order than they were cached), every --kv-store tier alone (disk, Redis), and the
// all-cached floor (the documents cached by a request with them in the same order). Every
// measured request asks a question its source has not seen, so the question is always computed.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace lazyattn::cli {

struct BenchStoreOptions {
    CommonOptions common;  // common.kv_stores: the tiers measured (none given: a fresh temp directory)
    int32_t docs_per_request = 5;
    int32_t doc_tokens = 512;
    int32_t tail_tokens = 32;
    int32_t repetitions = 12;   // measured requests per source (each over fresh documents)
    int32_t kv_cache_mb = 256;  // each source's RAM pool
    std::string data_path = "data/2wiki_sample.jsonl";
    std::string json_path;
};

CLI::App* add_bench_store_command(CLI::App& parent, BenchStoreOptions& o);
int run_bench_store(const BenchStoreOptions& o);

}  // namespace lazyattn::cli
