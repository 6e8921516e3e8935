#include "model/forward_batch.h"

#include <algorithm>
#include <string>

namespace lazyattn::model {

Status ForwardBatch::validate(int32_t num_blocks, int32_t block_size, int32_t vocab_size) const {
    const size_t n = token_ids.size();
    if (positions.size() != n || store_positions.size() != n || slot_mapping.size() != n) {
        return internal_error("forward batch: per-row arrays differ in length");
    }
    for (size_t r = 0; r < n; ++r) {
        if (token_ids[r] < 0 || token_ids[r] >= vocab_size) {
            return invalid_argument("token id " + std::to_string(token_ids[r]) + " outside the vocabulary");
        }
        if (slot_mapping[r] < 0 || slot_mapping[r] >= num_blocks * block_size) {
            return internal_error("forward batch: slot out of range");
        }
        if (positions[r] < 0) return internal_error("forward batch: negative position");
    }
    for (int32_t b : block_ids) {
        if (b < 0 || b >= num_blocks) return internal_error("forward batch: block id out of range");
    }
    int32_t covered = 0;
    for (const auto& seq : seqs) {
        if (seq.query_start != covered || seq.num_queries < 0 || seq.span_begin < 0 || seq.span_end < seq.span_begin ||
            seq.span_end > int32_t(spans.size())) {
            return internal_error("forward batch: sequence ranges inconsistent");
        }
        covered += seq.num_queries;
    }
    if (covered != int32_t(n)) return internal_error("forward batch: sequences do not cover the rows");
    for (const auto& span : spans) {
        const int32_t num_span_blocks = (span.num_tokens + block_size - 1) / block_size;
        if (span.num_tokens < 0 || span.block_offset < 0 ||
            span.block_offset + num_span_blocks > int32_t(block_ids.size())) {
            return internal_error("forward batch: span exceeds its block list");
        }
        if (span.override_count < 0 || span.override_begin < 0 ||
            int64_t(span.override_begin) + span.override_count > int64_t(overrides.size())) {
            return internal_error("forward batch: span overrides outside the list");
        }
        // Sorted, each token once, inside the span, and slots inside the pool: the kernels
        // binary-search them and read the slots unchecked.
        for (int32_t i = 0; i < span.override_count; ++i) {
            const kernels::KeyOverride& o = overrides[span.override_begin + i];
            if (o.token < 0 || o.token >= span.num_tokens ||
                (i > 0 && o.token <= overrides[span.override_begin + i - 1].token)) {
                return internal_error("forward batch: span overrides unsorted or outside the span");
            }
            if (o.slot < 0 || o.slot >= num_blocks * block_size) {
                return internal_error("forward batch: override slot out of range");
            }
        }
    }
    for (const KvBlockCopy& c : kv_copies) {
        const size_t num = size_t((int64_t(c.num_tokens) + block_size - 1) / block_size);
        if (c.num_tokens < 0 || c.src_blocks.size() != num || c.dst_blocks.size() != num) {
            return internal_error("forward batch: a block copy's lists do not match its tokens");
        }
        for (size_t i = 0; i < num; ++i) {
            for (int32_t b : {c.src_blocks[i], c.dst_blocks[i]}) {
                if (b < 0 || b >= num_blocks) return internal_error("forward batch: block copy outside the pool");
            }
            if (std::find(c.src_blocks.begin(), c.src_blocks.end(), c.dst_blocks[i]) != c.src_blocks.end()) {
                return internal_error("forward batch: a block copy writes a block it reads");
            }
        }
    }
    for (int32_t q : mass_seqs) {
        if (q < 0 || q >= int32_t(seqs.size())) return internal_error("forward batch: measured sequence out of range");
    }
    for (int32_t r : logit_rows) {
        if (r < 0 || r >= int32_t(n)) return internal_error("forward batch: logit row out of range");
    }
    return {};
}

}  // namespace lazyattn::model
