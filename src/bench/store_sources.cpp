// bench store's measurement (store_sources.h).
#include "bench/store_sources.h"

#include <algorithm>
#include <set>

#include "core/progress.h"

namespace lazyattn::bench {
namespace {

// A request over documents `docs` (pool indices) in the given order.
engine::RagRequest request_over(const Workload& w, const std::vector<int32_t>& docs, const std::vector<int32_t>& tail) {
    engine::RagRequest r;
    for (int32_t d : docs) r.segments.push_back(w.docs[size_t(d)]);
    r.tail = tail;
    r.max_tokens = 1;  // TTFT is the whole request
    r.ignore_eos = true;
    return r;
}

}  // namespace

// Fresh documents per repetition (plus one warm-up set), so no source sees a set twice. The
// workload cuts documents from a few hundred passages, so some come out identical: three
// times the need is drawn and the distinct ones kept.
Expected<StoreDocumentSets> make_store_document_sets(const StoreBenchConfig& o, const tokenizer::Tokenizer& tok) {
    const int32_t need = (o.repetitions + 1) * o.docs_per_request;
    WorkloadConfig wc;
    wc.num_docs = 3 * need;
    wc.doc_tokens = o.doc_tokens;
    wc.docs_per_request = o.docs_per_request;
    wc.tail_tokens = o.tail_tokens;
    wc.num_requests = 2;
    wc.zipf_s = 0;
    wc.passages_path = o.passages_path;
    LA_ASSIGN_OR_RETURN(Workload w, make_workload(wc, tok));
    StoreDocumentSets sets;
    sets.docs_per_request = o.docs_per_request;
    std::set<std::vector<int32_t>> seen;
    for (int32_t d = 0; d < wc.num_docs && int32_t(sets.distinct.size()) < need; ++d) {
        if (seen.insert(w.docs[size_t(d)]).second) sets.distinct.push_back(d);
    }
    if (int32_t(sets.distinct.size()) < need) {
        return invalid_argument("the passages give only " + std::to_string(sets.distinct.size()) +
                                " distinct documents of this length; fewer --repetitions or a larger --data");
    }
    // Measured requests ask another question than the warm-up ones, so the question is computed
    // in every source (cached tails would make the floor a different request).
    sets.warm_tail = w.requests[0].tail;
    sets.tail = w.requests[1].tail;
    if (sets.tail == sets.warm_tail) std::reverse(sets.tail.begin(), sets.tail.end());
    sets.workload = std::move(w);
    return sets;
}

Status fill_store_tiers(const StoreDocumentSets& sets, const std::vector<std::string>& tiers,
                        const StoreEngineMaker& make_engine, bool* start_failed) {
    const int32_t num_sets = sets.num_sets();
    auto writer = make_engine(tiers);
    if (!writer.ok()) {
        *start_failed = writer.status().code() != StatusCode::kUnavailable;
        return writer.status();
    }
    ProgressBar bar("bench store: filling the tiers", num_sets);
    for (int32_t set = 0; set < num_sets; ++set) {
        LA_RETURN_IF_ERROR((*writer)->run(request_over(sets.workload, sets.docs(set), sets.tail)).status());
        bar.update(set + 1);
    }
    bar.finish();
    store::SegmentStore* st = (*writer)->core().kv_store().store();
    if (st == nullptr) return invalid_argument("no store opened");
    st->flush();
    for (const store::TierStats& t : st->stats().tiers) {
        if (t.errors > 0) {
            return unavailable("the " + t.name + " tier " + t.where + " failed while being filled (" +
                               std::to_string(t.errors) + " errors)");
        }
    }
    return {};
}

Expected<std::vector<StoreSource>> make_store_sources(const std::vector<std::string>& tiers,
                                                      const StoreEngineMaker& make_engine) {
    std::vector<StoreSource> sources;
    auto add_source = [&](std::string name, std::string detail, std::vector<std::string> stores) -> Status {
        LA_ASSIGN_OR_RETURN(auto e, make_engine(std::move(stores)));
        sources.push_back({std::move(name), std::move(detail), std::move(e), {}, 0, 0, 0});
        return {};
    };
    LA_RETURN_IF_ERROR(add_source("recompute", "prefilled from scratch", {}));
    for (const std::string& t : tiers) {
        const std::string kind = t.rfind("redis://", 0) == 0 ? "redis" : "disk";
        LA_RETURN_IF_ERROR(add_source(kind, t, {t}));
    }
    LA_RETURN_IF_ERROR(add_source("ram", "cached by an earlier request, asked in another order", {}));
    LA_RETURN_IF_ERROR(add_source("floor", "cached by a request with the same documents in the same order", {}));
    return sources;
}

Status measure_store_sources(const StoreDocumentSets& sets, std::vector<StoreSource>& sources) {
    const int32_t num_sets = sets.num_sets();
    ProgressBar bar("bench store", int64_t(num_sets) * int64_t(sources.size()));
    int64_t done = 0;
    for (int32_t set = 0; set < num_sets; ++set) {
        const std::vector<int32_t> docs = sets.docs(set);
        std::vector<int32_t> reversed(docs.rbegin(), docs.rend());
        for (StoreSource& s : sources) {
            if (s.name == "ram" || s.name == "floor") {  // cache the documents first, unmeasured
                auto warm =
                    s.engine->run(request_over(sets.workload, s.name == "ram" ? docs : reversed, sets.warm_tail));
                if (!warm.ok()) return warm.status();
            }
            auto r = s.engine->run(request_over(sets.workload, reversed, sets.tail));
            if (!r.ok()) return r.status();
            if (r->finish_reason == engine::FinishReason::kError) return r->status;
            bar.update(++done);
            if (set == 0) continue;
            s.ttft_ms.push_back(r->stats.ttft_ms);
            s.docs_from_store += r->stats.segments_from_store;
            s.docs_from_ram += r->stats.segments_hit - r->stats.segments_from_store;
            s.docs_computed += r->stats.segments_missed;
        }
    }
    bar.finish();
    return {};
}

}  // namespace lazyattn::bench
