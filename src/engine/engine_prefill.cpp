// Engine: acquiring a request's KV. Segments are looked up one by one under a seed that knows
// only the model and the KV variant; misses become segment jobs computed from position 0 as
// their own sequences; block-attn then copies and re-rotates them per request; the tail is
// looked up under the segment list and computed against every segment at its logical offset.
#include <algorithm>
#include <map>

#include "core/check.h"
#include "engine/batch_builder.h"
#include "engine/engine.h"

namespace lazyattn::engine {
namespace {

int32_t blocks_for(int32_t tokens, int32_t block_size) { return (tokens + block_size - 1) / block_size; }

}  // namespace

Status Engine::acquire_segments(const RagRequest& request, ActiveRequest& ar) {
    if (!segments_are_blocks(config_.cache_mode)) return {};
    const int32_t bs = kv_.block_size();
    ar.segments.resize(request.segments.size());
    // Pass 1: look every segment up (taking references), so that allocating blocks for the
    // misses in pass 2 can never evict a block this request is about to reuse.
    std::map<std::vector<int32_t>, size_t> first_of;  // a document twice is looked up once
    std::vector<size_t> duplicates;
    int32_t logical = 0;
    for (size_t d = 0; d < request.segments.size(); ++d) {
        const auto& tokens = request.segments[d];
        SegmentPlacement& place = ar.segments[d];
        place.num_tokens = int32_t(tokens.size());
        place.logical_start = logical;
        logical += place.num_tokens;
        if (tokens.empty()) continue;
        if (!first_of.emplace(tokens, d).second) {
            duplicates.push_back(d);
            continue;
        }
        place.blocks = kv_.match(segment_seed_, tokens, place.num_tokens);
        ar.held.insert(ar.held.end(), place.blocks.begin(), place.blocks.end());
    }
    // Pass 2: misses become segment jobs in freshly allocated blocks.
    std::vector<SegmentPlacement*> jobs;
    std::vector<const std::vector<int32_t>*> job_tokens;
    std::vector<int32_t> job_done;
    for (const auto& [tokens, d] : first_of) {
        SegmentPlacement& place = ar.segments[d];
        const int32_t cached = std::min(place.num_tokens, int32_t(place.blocks.size()) * bs);
        ar.stats.reused_tokens += cached;
        if (cached == place.num_tokens) {
            ++ar.stats.segments_hit;
            continue;
        }
        ++ar.stats.segments_missed;
        ar.stats.prefill_tokens += place.num_tokens - cached;
        LA_ASSIGN_OR_RETURN(auto fresh, kv_.allocate(blocks_for(place.num_tokens, bs) - int32_t(place.blocks.size())));
        place.blocks.insert(place.blocks.end(), fresh.begin(), fresh.end());
        ar.held.insert(ar.held.end(), fresh.begin(), fresh.end());
        jobs.push_back(&place);
        job_tokens.push_back(&tokens);
        job_done.push_back(cached);
    }
    LA_RETURN_IF_ERROR(compute_segments(jobs, job_tokens, job_done));
    for (size_t i = 0; i < jobs.size(); ++i) kv_.publish(segment_seed_, *job_tokens[i], jobs[i]->blocks, true);
    for (size_t d : duplicates) {  // served by the first occurrence: a hit
        SegmentPlacement& place = ar.segments[d];
        place.blocks = ar.segments[first_of.at(request.segments[d])].blocks;
        for (kv::BlockId b : place.blocks) kv_.ref(b);
        ar.held.insert(ar.held.end(), place.blocks.begin(), place.blocks.end());
        ++ar.stats.segments_hit;
        ar.stats.reused_tokens += place.num_tokens;
    }
    if (config_.cache_mode == CacheMode::kBlockAttn) LA_RETURN_IF_ERROR(materialize_copies(ar));
    return {};
}

Status Engine::compute_segments(std::vector<SegmentPlacement*>& jobs,
                                std::vector<const std::vector<int32_t>*>& tokens, std::vector<int32_t>& done) {
    const int32_t bs = kv_.block_size();
    std::vector<float> ignored;
    // Each step packs as many job tokens as the batch budget allows, every job its own sequence
    // attending only to itself from position 0.
    for (;;) {
        model::ForwardBatch batch;
        batch.keys_rotated = keys_stored_rotated(config_.cache_mode);
        int32_t budget = config_.max_batch_tokens;
        for (size_t i = 0; i < jobs.size() && budget > 0; ++i) {
            const int32_t remaining = int32_t(tokens[i]->size()) - done[i];
            if (remaining <= 0) continue;
            const int32_t n = std::min(remaining, budget);
            add_plain_sequence(batch, {tokens[i]->begin() + done[i], tokens[i]->begin() + done[i] + n}, done[i],
                               jobs[i]->blocks, bs, 0);
            done[i] += n;
            budget -= n;
        }
        if (batch.num_rows() == 0) return {};
        LA_RETURN_IF_ERROR(forward(batch, &ignored));
    }
}

Status Engine::materialize_copies(ActiveRequest& ar) {
    // Block-Attention: a private copy of every segment's KV, keys re-rotated by delta =
    // logical_start (R(delta) R(i) k = R(i + delta) k), after which attention is plain (delta 0).
    const kv::KvShape& shape = kv_.shape();
    std::vector<int32_t> positions;
    for (SegmentPlacement& place : ar.segments) {
        if (place.num_tokens == 0) continue;
        LA_ASSIGN_OR_RETURN(auto copy, kv_.allocate(int32_t(place.blocks.size())));
        ar.held.insert(ar.held.end(), copy.begin(), copy.end());
        kv_.storage().copy_tokens(place.blocks.data(), copy.data(), place.num_tokens);
        const int32_t rows = shape.num_kv_heads * shape.block_size;
        positions.assign(rows, place.logical_start);
        for (int32_t layer = 0; layer < shape.num_layers; ++layer) {
            for (kv::BlockId b : copy) {
                float* k = kv_.storage().k(layer) + int64_t(b) * rows * shape.head_dim;
                model_.backend().rope_apply({k, positions.data(), rows, 1, shape.head_dim, model_.rope()});
            }
        }
        // The request reads only its copy; the cached original goes back to the cache (unpinned).
        for (kv::BlockId b : place.blocks) {
            ar.held.erase(std::find(ar.held.begin(), ar.held.end(), b));
            kv_.release({b});
        }
        place.blocks = std::move(copy);
        place.stored_base = place.logical_start;
    }
    return {};
}

Status Engine::prepare_tail(const RagRequest& request, ActiveRequest& ar) {
    const int32_t bs = kv_.block_size();
    kv::BlockHash seed;
    if (segments_are_blocks(config_.cache_mode)) {
        ar.tail_tokens = request.tail;
        for (const auto& s : request.segments) ar.tail_start += int32_t(s.size());
        seed = kv::hash_segment_list(tail_seed_, request.segments);
    } else {  // prefix, none: one causal sequence over the flattened prompt
        for (const auto& s : request.segments) ar.tail_tokens.insert(ar.tail_tokens.end(), s.begin(), s.end());
        ar.tail_tokens.insert(ar.tail_tokens.end(), request.tail.begin(), request.tail.end());
        seed = prefix_seed_;
    }
    ar.num_prompt_tail = int32_t(ar.tail_tokens.size());
    if (config_.cache_mode != CacheMode::kNone) {
        // At least the last prompt token is computed: its logits start generation.
        ar.tail_blocks = kv_.match(seed, ar.tail_tokens, ar.num_prompt_tail - 1);
        ar.held.insert(ar.held.end(), ar.tail_blocks.begin(), ar.tail_blocks.end());
        ar.num_tail_computed = int32_t(ar.tail_blocks.size()) * bs;
        ar.stats.reused_tokens += ar.num_tail_computed;
    }
    ar.stats.prefill_tokens += ar.num_prompt_tail - ar.num_tail_computed;
    return ensure_tail_blocks(ar, ar.num_prompt_tail);
}

Status Engine::ensure_tail_blocks(ActiveRequest& ar, int32_t num_tokens) {
    const int32_t need = blocks_for(num_tokens, kv_.block_size()) - int32_t(ar.tail_blocks.size());
    if (need <= 0) return {};
    LA_ASSIGN_OR_RETURN(auto fresh, kv_.allocate(need));
    ar.tail_blocks.insert(ar.tail_blocks.end(), fresh.begin(), fresh.end());
    ar.held.insert(ar.held.end(), fresh.begin(), fresh.end());
    return {};
}

Status Engine::compute_tail(ActiveRequest& ar, int32_t end, bool all_logits, std::vector<float>* logits) {
    const int32_t bs = kv_.block_size();
    LA_RETURN_IF_ERROR(ensure_tail_blocks(ar, end));
    logits->clear();
    std::vector<float> step;
    while (ar.num_tail_computed < end) {
        const int32_t begin = ar.num_tail_computed;
        const int32_t stop = std::min(end, begin + config_.max_batch_tokens);
        model::ForwardBatch b;
        b.keys_rotated = keys_stored_rotated(config_.cache_mode);
        const int32_t span_begin = 0;
        for (const SegmentPlacement& place : ar.segments) {
            b.spans.push_back({int32_t(b.block_ids.size()), place.num_tokens, place.logical_start, place.stored_base});
            b.block_ids.insert(b.block_ids.end(), place.blocks.begin(), place.blocks.end());
        }
        b.spans.push_back({int32_t(b.block_ids.size()), stop, ar.tail_start, ar.tail_start});
        b.block_ids.insert(b.block_ids.end(), ar.tail_blocks.begin(), ar.tail_blocks.begin() + blocks_for(stop, bs));
        b.seqs.push_back({0, stop - begin, span_begin, int32_t(b.spans.size())});
        for (int32_t t = begin; t < stop; ++t) {
            b.token_ids.push_back(ar.tail_tokens[t]);
            b.positions.push_back(ar.tail_start + t);
            b.store_positions.push_back(ar.tail_start + t);
            b.slot_mapping.push_back(ar.tail_blocks[t / bs] * bs + t % bs);
            if (all_logits || t == end - 1) b.logit_rows.push_back(t - begin);
        }
        LA_RETURN_IF_ERROR(forward(b, &step));
        logits->insert(logits->end(), step.begin(), step.end());
        ar.num_tail_computed = stop;
        after_step(ar);
    }
    return {};
}

}  // namespace lazyattn::engine
