// The RAG benchmark's request stream: a pool of documents, Zipf popularity over a random
// permutation of the pool (sampled from the whole pool: the paper's published scripts pass skew
// flags that never take effect), k distinct documents per request in random order, a question
// tail, a fixed output length, and arrival times (closed loop or Poisson). One seed, one stream:
// every cache mode runs exactly the same requests (digest() proves it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/request/rag_request.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::bench {

struct WorkloadConfig {
    int32_t num_docs = 100;
    int32_t doc_tokens = 512;
    int32_t docs_per_request = 5;  // k
    double zipf_s = 2.1;           // 0 = uniform
    int32_t tail_tokens = 32;
    // > 0: every request starts with the same preamble of this many tokens (a system prompt:
    // segment 0, marked first_segment_is_preamble), as chat requests do; anchored document
    // reuse needs one.
    int32_t preamble_tokens = 0;
    int32_t output_tokens = 16;
    int32_t num_requests = 40;
    double arrival_rate = 0;  // requests/s (Poisson); 0 = closed loop
    uint64_t seed = 1;
    std::string passages_path = "data/2wiki_sample.jsonl";  // text the documents are cut from

    Status validate() const;
};

struct Workload {
    std::vector<std::vector<int32_t>> docs;  // the pool
    std::vector<double> popularity;          // per pool document, sums to 1
    std::vector<engine::RagRequest> requests;
    std::vector<std::vector<int32_t>> request_docs;  // pool indices per request, in prompt order
    std::vector<double> arrival_s;                   // seconds from the start (Poisson), or all 0
    uint64_t digest() const;                         // XXH3-64 over every token of every request
};

Expected<Workload> make_workload(const WorkloadConfig& config, const tokenizer::Tokenizer& tokenizer);

// Hit ratio of a cache holding the `capacity` most popular items of `popularity` (the analytic
// best case): sum of the top-`capacity` probabilities.
double analytic_hit_ratio(std::vector<double> popularity, int64_t capacity);

}  // namespace lazyattn::bench
