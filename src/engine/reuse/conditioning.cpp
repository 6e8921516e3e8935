#include "engine/reuse/conditioning.h"

#include <xxhash.h>

#include <algorithm>

#include "core/check.h"
#include "engine/request/document_reuse.h"
#include "kv/kv_shape.h"

namespace lazyattn::engine {

ConditioningPrefix conditioning_prefix(const NeighbourIndex& index, const std::string& tenant,
                                       const std::vector<int32_t>& document, int32_t k) {
    ConditioningPrefix prefix;
    const auto near = index.nearest(tenant, document, k);
    prefix.short_of_neighbours = int32_t(near.size()) < k;
    const size_t share =
        std::min(document.size(), size_t(DocumentReuse::kMaxNeighbourTokens) / std::max<size_t>(1, near.size()));
    for (auto it = near.rbegin(); it != near.rend(); ++it) {
        const std::vector<int32_t>& n = **it;
        prefix.tokens.insert(prefix.tokens.end(), n.begin(), n.begin() + int64_t(std::min(n.size(), share)));
        prefix.neighbours.push_back(&n);
    }
    prefix.key = conditioning_key(k, prefix.neighbours, int32_t(prefix.tokens.size()));
    return prefix;
}

ConditioningKey conditioning_key(int32_t k, const std::vector<const std::vector<int32_t>*>& neighbours,
                                 int32_t prefix_tokens) {
    ConditioningKey key;
    key.neighbours = k;
    key.prefix_tokens = prefix_tokens;
    XXH3_state_t* st = XXH3_createState();
    LA_CHECK(st != nullptr);
    XXH3_128bits_reset(st);
    XXH3_128bits_update(st, &k, sizeof k);
    XXH3_128bits_update(st, &prefix_tokens, sizeof prefix_tokens);
    for (const std::vector<int32_t>* n : neighbours) {
        const XXH128_hash_t content = XXH3_128bits(n->data(), n->size() * sizeof(int32_t));
        XXH3_128bits_update(st, &content, sizeof content);
    }
    const XXH128_hash_t d = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    key.low = d.low64;
    key.high = d.high64;
    return key;
}

kv::BlockHash conditioned_seed(const kv::BlockHash& seed, const ConditioningKey& key) {
    return kv::hash_salt(seed, key.name());
}

std::vector<ConditioningPlacement> match_conditioning(const RagRequest& r, const kv::BlockHash& seed,
                                                      const std::vector<size_t>& needs_job, const NeighbourIndex& index,
                                                      const SegmentJobs& jobs, kv::KvCache& kv) {
    std::vector<ConditioningPlacement> out;
    for (size_t d : needs_job) {
        const int32_t k = r.conditioning_neighbours(d);
        if (k == 0 || r.reuse.neighbours_when_ready) continue;  // read only where it exists: never encoded here
        ConditioningPlacement c;
        c.segment = d;
        ConditioningPrefix prefix = conditioning_prefix(index, r.tenant, r.segments[d], k);
        c.tokens = std::move(prefix.tokens);
        c.short_of_neighbours = prefix.short_of_neighbours;
        // One neighbour's whole document is its plain cached copy.
        c.seed = seed;
        if (!c.tokens.empty()) {
            if (const int64_t job = jobs.find(c.seed, c.tokens); job >= 0) {
                c.job = job;
                c.blocks = jobs.all().at(job).blocks;
                for (kv::BlockId b : c.blocks) kv.ref(b);
            } else {
                c.blocks = kv.match(c.seed, c.tokens, int32_t(c.tokens.size()));
            }
        }
        out.push_back(std::move(c));
    }
    return out;
}

void release_conditioning(std::vector<ConditioningPlacement>& prefixes, kv::KvCache& kv) {
    for (ConditioningPlacement& c : prefixes) {
        kv.release(c.blocks);
        c.blocks.clear();
    }
}

void start_conditioning(SegmentJob& job, ConditioningPlacement& c, SegmentJobs& jobs, kv::KvCache& kv) {
    const int32_t bs = kv.block_size();
    const int32_t missing = kv::blocks_for(int64_t(c.tokens.size()), bs) - int32_t(c.blocks.size());
    if (c.job < 0 && missing > 0) {
        if (const int64_t running = jobs.find(c.seed, c.tokens); running >= 0) {
            // Another document of this request started the same prefix: join it.
            kv.release(c.blocks);
            c.blocks = jobs.all().at(running).blocks;
            for (kv::BlockId b : c.blocks) kv.ref(b);
            c.job = running;
        } else {
            auto fresh = kv.allocate(missing);
            LA_CHECK_MSG(fresh.ok(), "admission counted its blocks but allocation failed: %s",
                         fresh.status().to_string().c_str());
            SegmentJob prefix;
            prefix.seed = c.seed;
            prefix.tokens = c.tokens;
            prefix.num_computed = int32_t(c.blocks.size()) * bs;
            c.blocks.insert(c.blocks.end(), fresh->begin(), fresh->end());
            prefix.blocks = c.blocks;
            c.job = jobs.add(std::move(prefix));
        }
    }
    // The document job reads the prefix (its references move there) after the prefix's job.
    job.anchor_tokens = int32_t(c.tokens.size());
    job.anchor_blocks = std::move(c.blocks);
    c.blocks.clear();
    job.anchor_job = c.job;
    jobs.join(c.job, job.background);
    job.keys_from_zero = true;
}

}  // namespace lazyattn::engine
