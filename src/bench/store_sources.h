// `lazyattn bench store`'s measurement: TTFT of a k-document request whose documents come from
// recompute, the RAM pool, each persistent store tier and the all-cached floor, side by side.
// Each source is an engine of its own put in the state that makes its documents come from there;
// every tier is first filled by a writer engine; the sources then run the same fresh document
// sets in turn (repetition by repetition, so drift hits all alike), the first set a warm-up.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/rag_workload.h"
#include "core/status.h"
#include "engine/sync_engine.h"

namespace lazyattn::bench {

// What is measured (bench store's options).
struct StoreBenchConfig {
    int32_t docs_per_request = 4;
    int32_t doc_tokens = 512;
    int32_t tail_tokens = 16;
    int32_t repetitions = 20;
    std::string passages_path;  // the QA file whose passages make up the documents
};

// One source of a request's documents: an engine whose RAM pool (and store, if any) is in the
// state that makes its documents come from there.
struct StoreSource {
    std::string name;    // "recompute", "ram", "disk", "redis", "floor"
    std::string detail;  // the tier's location, or how the source is made
    std::unique_ptr<engine::SyncEngine> engine;
    std::vector<double> ttft_ms;
    int64_t docs_from_store = 0, docs_from_ram = 0, docs_computed = 0;
};

// The documents of each repetition (plus one warm-up set), distinct, and the two questions.
struct StoreDocumentSets {
    Workload workload;
    std::vector<int32_t> distinct;  // pool indices, docs_per_request per set
    int32_t docs_per_request = 0;
    std::vector<int32_t> warm_tail, tail;

    int32_t num_sets() const { return docs_per_request > 0 ? int32_t(distinct.size()) / docs_per_request : 0; }
    std::vector<int32_t> docs(int32_t set) const {
        return {distinct.begin() + set * docs_per_request, distinct.begin() + (set + 1) * docs_per_request};
    }
};

// Fresh documents per repetition (plus one warm-up set), so no source sees a set twice.
Expected<StoreDocumentSets> make_store_document_sets(const StoreBenchConfig& config, const tokenizer::Tokenizer& tok);

// An engine over the given --kv-store tiers (none: the RAM pool alone).
using StoreEngineMaker = std::function<Expected<std::unique_ptr<engine::SyncEngine>>(std::vector<std::string>)>;

// Every document into every tier first, by a writer engine of its own (flushed, then gone).
// *start_failed: the writer engine did not start (a tier that does not answer is not that).
Status fill_store_tiers(const StoreDocumentSets& sets, const std::vector<std::string>& tiers,
                        const StoreEngineMaker& make_engine, bool* start_failed);
// The sources side by side: recompute, each tier, the RAM pool, the all-cached floor (last).
Expected<std::vector<StoreSource>> make_store_sources(const std::vector<std::string>& tiers,
                                                      const StoreEngineMaker& make_engine);
// Interleaved: set by set, every source in turn; set 0 warms every engine up and is not measured.
Status measure_store_sources(const StoreDocumentSets& sets, std::vector<StoreSource>& sources);

}  // namespace lazyattn::bench
