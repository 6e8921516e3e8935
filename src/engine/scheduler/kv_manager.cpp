// KvManager: placing requests' KV (kv_manager.h). Segments are looked up one by one under a
// seed that knows only the model and the KV variant (so order never affects hits); a segment
// another admitted request is still computing is joined, not computed twice; the rest become
// segment jobs in freshly allocated blocks.
#include "engine/scheduler/kv_manager.h"

#include <algorithm>
#include <climits>
#include <random>

#include "core/check.h"
#include "engine/reuse/conditioning.h"
#include "engine/reuse/phase_kinds.h"
#include "engine/scheduler/block_budget.h"
#include "kernels/params/attention_params.h"

namespace lazyattn::engine {
namespace {

uint64_t random_key() {
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ uint64_t(rd());
}

}  // namespace

KvManager::KvManager(const std::string& model_description, backend::KvMemory& kv_memory, const EngineConfig& config,
                     KvStoreAdapter* store)
    : config_(config), kv_(kv_memory.shape()), jobs_(kv_), store_(store) {
    const bool rotated = keys_stored_rotated(config.cache_mode);
    const uint64_t key = config.cache_hash_key != 0 ? config.cache_hash_key : random_key();
    seeds_.segment = kv::hash_seed(rotated ? "segment/rotated" : "segment/raw", model_description, key);
    seeds_.tail = kv::hash_seed(rotated ? "tail/rotated" : "tail/raw", model_description, key);
    seeds_.prefix = kv::hash_seed("prefix", model_description, key);
}

ChainSeeds KvManager::seeds_for(const std::string& tenant) const {
    return {kv::hash_salt(seeds_.segment, tenant), kv::hash_salt(seeds_.tail, tenant),
            kv::hash_salt(seeds_.prefix, tenant)};
}

bool KvManager::allocate(SequenceState& s, bool others_running, const NeighbourIndex& neighbours) {
    RequestKv& ar = s.kv;
    ar = RequestKv();
    if (segments_are_blocks(config_.cache_mode)) {
        ar.tail_tokens = s.request.tail;
    } else {  // prefix, none: one causal sequence over the flattened prompt
        for (const auto& seg : s.request.segments) ar.tail_tokens.insert(ar.tail_tokens.end(), seg.begin(), seg.end());
        ar.tail_tokens.insert(ar.tail_tokens.end(), s.request.tail.begin(), s.request.tail.end());
    }
    // Tokens generated before a preemption are recomputed as part of the tail.
    s.admission = {};
    ar.tail_tokens.insert(ar.tail_tokens.end(), s.history.end() - s.num_generated, s.history.end());
    std::vector<size_t> needs_job;
    match_segments(s, neighbours, &needs_job);
    match_tail(s);
    auto prefixes = match_conditioning(s.request, s.seeds.segment, needs_job, neighbours, jobs_, kv_);
    // Allocation evicts cached blocks, so allocate only once the whole admission is known to
    // fit: a request that must keep waiting never flushes the cache.
    if (fresh_blocks_needed(s, needs_job, prefixes, others_running) > kv_.num_free()) {
        release_conditioning(prefixes, kv_);
        free(s);
        return false;
    }
    start_jobs(s, needs_job, prefixes);
    if (SequenceState* leader = patches_.leader_for(s)) {
        patches_.follow(s, *leader);
    } else {
        start_patches(s);
    }
    LA_CHECK(grow_tail(s, ar.num_prompt_tail()));
    if (ar.tail_copy_tokens > 0) {  // made by the next forward before it stores any row
        const kv::BlockId own = ar.tail_blocks[size_t(ar.num_tail_computed() / kv_.block_size())];
        pending_copies_.push_back({s.id, {{ar.tail_copy_source}, {own}, ar.tail_copy_tokens, 0}});
    }
    return true;
}

kv::BlockHash KvManager::segment_seed(const SequenceState& s, size_t d) const {
    kv::BlockHash seed = s.seeds.segment;
    if (s.request.anchor_tokens(d) > 0) {
        // An anchored document's KV depends on the preamble it was encoded after.
        const auto chain = kv::hash_chain(seed, s.request.segments[0], kv_.block_size());
        seed = kv::hash_salt(chain.back(), "anchored");
    }
    if (s.request.conditioning_neighbours(d) > 0) seed = conditioned_seed(seed, s.request.conditioning_key(d));
    if (!config_.position_aware_segments) return seed;
    const int32_t where[1] = {s.kv.segments[d].logical_start};
    return kv::hash_block(seed, where);
}

kv::BlockHash KvManager::tail_seed(const SequenceState& s) const {
    if (!segments_are_blocks(config_.cache_mode)) return s.seeds.prefix;
    const kv::BlockHash seed = kv::hash_segment_list(s.seeds.tail, s.request.segments);
    // The tail's KV depends on how it read the documents: conditioned, also on which copy of each
    // (none where neighbours@ready found none).
    if (s.request.reuse.is_plain()) return seed;
    std::string how = s.request.reuse.name();
    for (size_t d = 0; d < s.request.segments.size() && s.request.reuse.neighbours > 0; ++d) {
        how += '/' + s.request.conditioning_key(d).name();
    }
    return kv::hash_salt(seed, how);
}

void KvManager::match_segments(SequenceState& s, const NeighbourIndex& index, std::vector<size_t>* needs_job) {
    const auto& segments = s.request.segments;
    const int32_t bs = kv_.block_size();
    RequestKv& ar = s.kv;
    ar.segments.clear();
    s.segment_jobs.clear();
    needs_job->clear();
    if (!segments_are_blocks(config_.cache_mode)) return;  // flattened into the tail
    ar.segments.assign(segments.size(), {});
    s.segment_jobs.assign(segments.size(), -1);
    int32_t logical = 0;
    for (size_t d = 0; d < segments.size(); ++d) {
        ar.segments[d].num_tokens = int32_t(segments[d].size());
        ar.segments[d].logical_start = logical;
        ar.segments[d].stored_base = s.request.anchor_tokens(d);
        logical += int32_t(segments[d].size());
    }
    resolve_conditioned_copies(s, index);
    // Join running jobs, match cached blocks (references taken); repeats are filled in later.
    for (size_t d = 0; d < segments.size(); ++d) {
        SegmentPlacement& place = ar.segments[d];
        if (segments[d].empty() || first_occurrence(s, d) != d) continue;
        const kv::BlockHash seed = segment_seed(s, d);
        if (const int64_t job = jobs_.find(seed, segments[d]); job >= 0) {
            s.segment_jobs[d] = job;
            jobs_.join(job);
            place.blocks = jobs_.at(job).blocks;
            for (kv::BlockId b : place.blocks) kv_.ref(b);
            ar.held.insert(ar.held.end(), place.blocks.begin(), place.blocks.end());
            continue;
        }
        place.blocks = kv_.match(seed, segments[d], place.num_tokens);
        ar.held.insert(ar.held.end(), place.blocks.begin(), place.blocks.end());
        if (int64_t(place.blocks.size()) * bs < place.num_tokens) needs_job->push_back(d);
    }
}

void KvManager::resolve_conditioned_copies(SequenceState& s, const NeighbourIndex& index) {
    RagRequest& r = s.request;
    if (r.reuse.neighbours <= 0 || !segments_are_blocks(config_.cache_mode)) {
        r.conditioned_ready.clear();
        r.conditioned_on.clear();
        return;
    }
    const bool when_ready = r.reuse.neighbours_when_ready;
    if (when_ready && r.conditioning_pinned) {  // decided at the first admission: counted as then
        for (size_t d = 0; d < r.segments.size(); ++d) {
            if (!r.is_document(d) || r.segments[d].empty()) continue;
            s.admission.conditioned_lookups += 1;
            s.admission.conditioned += r.conditioning_neighbours(d) > 0 ? 1 : 0;
        }
        return;
    }
    r.conditioned_on.assign(r.segments.size(), {});
    r.conditioned_ready.assign(when_ready ? r.segments.size() : 0, 0);
    for (size_t d = 0; d < r.segments.size(); ++d) {
        if (!r.is_document(d) || r.segments[d].empty()) continue;
        // The copy conditioned on the neighbours the tenant's index gives now: one made on other
        // neighbours (another index, a corpus that changed) is named otherwise, so never found.
        const ConditioningPrefix prefix = conditioning_prefix(index, r.tenant, r.segments[d], r.reuse.neighbours);
        r.conditioned_on[d] = prefix.key;
        if (!when_ready) continue;
        s.admission.conditioned_lookups += 1;
        if (prefix.short_of_neighbours) continue;  // never made on fewer than K: read plain
        r.conditioned_ready[d] = 1;                // segment_seed(s, d) is the conditioned copy's now
        // A copy still being computed is not there yet: the request reads the plain one rather
        // than wait (the copy serves the next request).
        const bool found =
            kv_.contains(segment_seed(s, d), r.segments[d]) ||
            (store_ != nullptr && store_->storable(r, d) && store_->contains(r.tenant, r.segments[d], prefix.key));
        r.conditioned_ready[d] = found ? 1 : 0;
        s.admission.conditioned += found ? 1 : 0;
    }
}

size_t KvManager::first_occurrence(const SequenceState& s, size_t d) const {
    // The same tokens are the same KV only under the same seed: an anchored document equal to
    // the preamble, or (position-keyed) a document at another slot, is another encoding.
    const auto& segments = s.request.segments;
    for (size_t e = 0; e < d; ++e) {
        if (segments[e] == segments[d] && segment_seed(s, e) == segment_seed(s, d)) return e;
    }
    return d;
}

void KvManager::start_jobs(SequenceState& s, const std::vector<size_t>& needs_job,
                           std::vector<ConditioningPlacement>& prefixes) {
    if (!segments_are_blocks(config_.cache_mode)) return;  // flattened into the tail
    const auto& segments = s.request.segments;
    const int32_t bs = kv_.block_size();
    RequestKv& ar = s.kv;
    // The misses become jobs in fresh blocks (the request and the job each hold a reference).
    for (size_t d : needs_job) {
        SegmentPlacement& place = ar.segments[d];
        const int32_t num_present = int32_t(place.blocks.size());
        const int32_t cached = num_present * bs;
        auto fresh = kv_.allocate(kv::blocks_for(place.num_tokens, bs) - num_present);
        LA_CHECK_MSG(fresh.ok(), "admission counted its blocks but allocation failed: %s",
                     fresh.status().to_string().c_str());
        place.blocks.insert(place.blocks.end(), fresh->begin(), fresh->end());
        ar.held.insert(ar.held.end(), fresh->begin(), fresh->end());
        ConditioningPlacement* conditioning = nullptr;
        for (ConditioningPlacement& c : prefixes) {
            if (c.segment == d) conditioning = &c;
        }
        if (load_segment(s, d, num_present)) {  // from a store tier: a hit, nothing to compute
            if (conditioning != nullptr) {      // its prefix is not needed after all
                kv_.release(conditioning->blocks);
                conditioning->blocks.clear();
            }
            s.admission.hits += 1;
            s.admission.from_store += 1;
            s.admission.reused += place.num_tokens;
            continue;
        }
        s.admission.misses += 1;
        s.admission.reused += cached;
        s.admission.computed += place.num_tokens - cached;
        SegmentJob job;
        job.seed = segment_seed(s, d);
        job.tokens = segments[d];
        job.blocks = place.blocks;
        job.num_computed = cached;
        job.num_users = 1;
        // Fewer neighbours found than asked for (a corpus still small, or a lookup after
        // eviction): the document is encoded for this request only, since a copy published under
        // the K-neighbour key would be what every later request reads, in RAM and in the store,
        // even once the corpus has its K neighbours.
        job.shared = conditioning == nullptr || !conditioning->short_of_neighbours;
        // A copy read only where it exists, found in the store but not loaded from it after all
        // (an outage since): encoded alone for this request, never published as the conditioned one.
        if (s.request.reuse.neighbours_when_ready && s.request.conditioning_neighbours(d) > 0) job.shared = false;
        job.storable = job.shared && store_ != nullptr && store_->storable(s.request, d);
        if (job.storable) job.store_variant = store_->variant(s.request.tenant, s.request.conditioning_key(d));
        if (conditioning != nullptr && !conditioning->tokens.empty()) {
            start_conditioning(job, *conditioning, jobs_, kv_);
        }
        if (const int32_t anchor = s.request.anchor_tokens(d); anchor > 0) {
            // Segment 0 (the preamble) was matched or made a job before any document.
            job.anchor_tokens = anchor;
            job.anchor_blocks = ar.segments[0].blocks;
            for (kv::BlockId b : job.anchor_blocks) kv_.ref(b);
            job.anchor_job = s.segment_jobs[0];
            jobs_.join(job.anchor_job);
        }
        s.segment_jobs[d] = jobs_.add(std::move(job));
    }
    for (size_t d = 0; d < segments.size(); ++d) {
        if (segments[d].empty()) continue;
        const size_t first = first_occurrence(s, d);
        if (first == d) {
            // Not a job: cached or joined, so a hit.
            if (std::find(needs_job.begin(), needs_job.end(), d) != needs_job.end()) continue;
            s.admission.hits += 1;
            s.admission.reused += int32_t(segments[d].size());
            continue;
        }
        // A repeat reads the first occurrence's blocks (a hit too).
        s.admission.hits += 1;
        s.admission.reused += int32_t(segments[d].size());
        SegmentPlacement& place = ar.segments[d];
        place.blocks = ar.segments[first].blocks;
        s.segment_jobs[d] = s.segment_jobs[first];
        jobs_.join(s.segment_jobs[d]);
        for (kv::BlockId b : place.blocks) kv_.ref(b);
        ar.held.insert(ar.held.end(), place.blocks.begin(), place.blocks.end());
    }
}

void KvManager::match_tail(SequenceState& s) {
    RequestKv& ar = s.kv;
    const kv::BlockHash seed = tail_seed(s);
    if (segments_are_blocks(config_.cache_mode)) {
        ar.tail_start = 0;
        for (const auto& seg : s.request.segments) ar.tail_start += int32_t(seg.size());
    }
    ar.phases = {PrefillPhase{PhaseKind::kTail, int32_t(ar.tail_tokens.size()), 0}};
    // Cached tail blocks have no logits: a request that wants every tail row (raw logits or
    // prompt logprobs) computes them all.
    // Nor does a tail a measurement computes (the probe of a selection by the question writes
    // every tail row).
    if (config_.cache_mode != CacheMode::kNone && !s.all_tail_rows() &&
        !measurement_writes_tail(s.request.reuse.recompute_select)) {
        // At least the last prompt token is computed: its logits start generation.
        ar.tail_blocks = kv_.match(seed, ar.tail_tokens, ar.num_prompt_tail() - 1);
        ar.held.insert(ar.held.end(), ar.tail_blocks.begin(), ar.tail_blocks.end());
        ar.tail().computed = int32_t(ar.tail_blocks.size()) * kv_.block_size();
        // Then the next block's first rows, when a cached block starts with them (a finished
        // request's last, partly filled block; a block this prompt leaves mid-way): copied into
        // this request's own block (allocate()), never shared; its source held until then.
        const auto copy = kv_.match_partial(seed, ar.tail_tokens, ar.tail_blocks.size(), ar.num_prompt_tail() - 1);
        if (copy.num_tokens > 0) {
            ar.tail_copy_source = copy.block;
            ar.tail_copy_tokens = copy.num_tokens;
            ar.held.push_back(copy.block);
            ar.tail().computed += copy.num_tokens;
        }
    }
}

int64_t KvManager::fresh_blocks_needed(const SequenceState& s, const std::vector<size_t>& needs_job,
                                       const std::vector<ConditioningPlacement>& prefixes, bool others_running) const {
    const int32_t bs = kv_.block_size();
    const RequestKv& ar = s.kv;
    const RagRequest& r = s.request;
    int64_t fresh = std::max<int64_t>(0, block_budget::tail(ar.num_prompt_tail(), bs) - int64_t(ar.tail_blocks.size()));
    for (size_t d : needs_job) fresh += block_budget::segment(r, d, bs) - int64_t(ar.segments[d].blocks.size());
    if (patches_.leader_for(s) == nullptr) {  // a follower reads its leader's patch blocks
        for (size_t d = 0; d < ar.segments.size(); ++d) fresh += block_budget::recompute(r, d, bs);
    }
    for (const ConditioningPlacement& c : prefixes) {
        if (c.job < 0) fresh += block_budget::conditioning(int64_t(c.tokens.size()), bs) - int64_t(c.blocks.size());
    }
    if (config_.cache_mode == CacheMode::kBlockAttn && others_running) {
        // Room for the private copies too, or requests would preempt each other in turn as
        // their copies are made.
        for (size_t d = 0; d < ar.segments.size(); ++d) fresh += block_budget::private_copy(r, d, bs);
    }
    return fresh;
}

void KvManager::start_patches(SequenceState& s) {
    RequestKv& ar = s.kv;
    ar.clear_recompute_phases();
    if (!segments_are_blocks(config_.cache_mode)) return;
    PhasePlan plan = plan_phases(s.request, ar, kv_.block_size());
    for (size_t d = 0; d < ar.segments.size(); ++d) {
        SegmentPlacement& place = ar.segments[d];
        PhasePlan::Segment& planned = plan.segments[d];
        place.patch_rows = std::move(planned.patch_rows);
        place.patch_tokens = int32_t(place.patch_rows.size());
        place.sparse_patch = plan.sparse;
        if (planned.room == 0) continue;
        if (planned.measured) place.selection_score.assign(size_t(place.num_tokens), 0.0f);
        auto fresh = kv_.allocate(kv::blocks_for(planned.room, kv_.block_size()));
        LA_CHECK_MSG(fresh.ok(), "admission counted its blocks but allocation failed: %s",
                     fresh.status().to_string().c_str());
        place.patch_blocks = std::move(fresh).value();
        ar.held.insert(ar.held.end(), place.patch_blocks.begin(), place.patch_blocks.end());
    }
    ar.phases.insert(ar.phases.begin(), plan.phases.begin(), plan.phases.end());
    if (!plan.phases.empty()) patches_.lead(s);
}

bool KvManager::grow_tail(SequenceState& s, int32_t num_tokens) {
    RequestKv& ar = s.kv;
    const int32_t need = kv::blocks_for(num_tokens, kv_.block_size()) - int32_t(ar.tail_blocks.size());
    if (need <= 0) return true;
    auto fresh = kv_.allocate(need);
    if (!fresh.ok()) return false;
    ar.tail_blocks.insert(ar.tail_blocks.end(), fresh->begin(), fresh->end());
    ar.held.insert(ar.held.end(), fresh->begin(), fresh->end());
    return true;
}

Status KvManager::make_private_copies(SequenceState& s) {
    // Block-Attention: a private copy of every segment's KV, keys re-rotated by delta =
    // logical_start - stored_base (R(delta) R(b + i) k = R(logical_start + i) k); attention is
    // then plain (delta 0). The
    // request reads only its copy; the cached original returns to the cache. The copy itself is
    // memory work: it joins this step's plan (pending_copies_), and the model's forward has the
    // backend make it before any of the step's rows are stored, so the original's content is
    // read before anything allocated after its release can overwrite it.
    for (SegmentPlacement& place : s.kv.segments) {
        if (place.num_tokens == 0 || place.private_copy) continue;
        auto copy = kv_.allocate(int32_t(place.blocks.size()));
        if (!copy.ok()) return copy.status();
        s.kv.held.insert(s.kv.held.end(), copy->begin(), copy->end());
        pending_copies_.push_back(
            {s.id,
             {place.blocks, *copy, place.num_tokens, kernels::rotation_delta(place.logical_start, place.stored_base)}});
        for (kv::BlockId b : place.blocks) s.kv.held.erase(std::find(s.kv.held.begin(), s.kv.held.end(), b));
        kv_.release(place.blocks);
        place.blocks = std::move(copy).value();
        place.stored_base = place.logical_start;
        place.private_copy = true;
    }
    return {};
}

void KvManager::free(SequenceState& s) {
    patches_.leave(s);  // before its blocks go: a follower may take over the leader's patches
    // Tail first, then segments from last to first, each chain from its end (KvCache::release):
    // eviction then takes a request's least reusable blocks first, never a document's head
    // before its end. `held` is the same references as a multiset.
    size_t released = s.kv.tail_blocks.size();
    kv_.release(s.kv.tail_blocks);
    for (auto it = s.kv.segments.rbegin(); it != s.kv.segments.rend(); ++it) {
        kv_.release(it->patch_blocks);
        kv_.release(it->blocks);
        released += it->blocks.size() + it->patch_blocks.size();
    }
    if (s.kv.tail_copy_source >= 0) {  // not yet let go of by publish_tail
        kv_.release({s.kv.tail_copy_source});
        ++released;
        s.kv.tail_copy_source = -1;
    }
    LA_CHECK_MSG(released == s.kv.held.size(), "released %zu blocks of %zu held", released, s.kv.held.size());
    s.kv.held.clear();
    // Copies planned into blocks just released are moot (and must not write them any more).
    pending_copies_.erase(
        std::remove_if(pending_copies_.begin(), pending_copies_.end(), [&](const auto& c) { return c.first == s.id; }),
        pending_copies_.end());
    // Later segments first: an anchored document's job lets go of its preamble's job.
    for (auto j = s.segment_jobs.rbegin(); j != s.segment_jobs.rend(); ++j) {
        const int64_t job_id = *j;
        *j = -1;
        jobs_.leave(job_id);
    }
    s.kv.segments.clear();
    s.kv.tail_blocks.clear();
    s.admitted = false;
    s.materialized = false;
}

void KvManager::publish_tail(SequenceState& s) {
    if (s.kv.tail_copy_source >= 0) {  // the forward that copied its rows has run
        s.kv.held.erase(std::find(s.kv.held.begin(), s.kv.held.end(), s.kv.tail_copy_source));
        kv_.release({s.kv.tail_copy_source});
        s.kv.tail_copy_source = -1;
    }
    if (config_.cache_mode == CacheMode::kNone) return;
    // The last, partly filled block too: later prompts copy its rows (match_partial).
    kv_.publish(tail_seed(s), std::span<const int32_t>(s.kv.tail_tokens.data(), s.kv.num_prompt_tail()),
                s.kv.tail_blocks, true);
}

std::vector<model::KvBlockCopy> KvManager::take_copies() {
    std::vector<model::KvBlockCopy> out;
    for (auto& [id, copy] : pending_copies_) out.push_back(std::move(copy));
    pending_copies_.clear();
    return out;
}

bool KvManager::advance_job(int64_t job_id, int32_t n) {
    SegmentJob& job = jobs_.at(job_id);
    job.num_computed += n;
    if (!job.done()) return false;
    if (job.shared) kv_.publish(job.seed, job.tokens, job.blocks, true);
    if (job.storable) store_->write(job.store_variant, job.tokens, job.blocks);
    jobs_.finish(job_id);  // the users keep their own references
    return true;
}

bool KvManager::has_conditioned_copy(const std::string& tenant, const std::vector<int32_t>& tokens,
                                     const ConditioningKey& key) const {
    return kv_.contains(conditioned_seed(seeds_for(tenant).segment, key), tokens);
}

int64_t KvManager::start_background_job(const std::string& tenant, const std::vector<int32_t>& tokens,
                                        const ConditioningKey& key, const std::vector<int32_t>& prefix,
                                        int32_t reserve) {
    const int32_t bs = kv_.block_size();
    const ChainSeeds seeds = seeds_for(tenant);
    // The prefix, as match_conditioning places a request's: plain KV of its tokens.
    ConditioningPlacement c;
    c.tokens = prefix;
    c.seed = seeds.segment;
    if (!c.tokens.empty()) {
        if (const int64_t running = jobs_.find(c.seed, c.tokens); running >= 0) {
            c.job = running;
            c.blocks = jobs_.at(running).blocks;
            for (kv::BlockId b : c.blocks) kv_.ref(b);
        } else {
            c.blocks = kv_.match(c.seed, c.tokens, int32_t(c.tokens.size()));
        }
    }
    int64_t fresh = kv::blocks_for(int64_t(tokens.size()), bs);
    if (c.job < 0) fresh += kv::blocks_for(int64_t(c.tokens.size()), bs) - int64_t(c.blocks.size());
    if (fresh + reserve > kv_.num_free()) {
        kv_.release(c.blocks);
        return -1;
    }
    auto blocks = kv_.allocate(kv::blocks_for(int64_t(tokens.size()), bs));
    LA_CHECK_MSG(blocks.ok(), "background job counted its blocks but allocation failed: %s",
                 blocks.status().to_string().c_str());
    SegmentJob job;
    job.seed = conditioned_seed(seeds.segment, key);
    job.tokens = tokens;
    job.blocks = std::move(blocks).value();
    job.num_users = 1;
    job.background = true;
    job.storable = store_ != nullptr && store_->store() != nullptr && !config_.position_aware_segments;
    if (job.storable) job.store_variant = store_->variant(tenant, key);
    const int64_t first_new = jobs_.next_id();
    if (!c.tokens.empty()) start_conditioning(job, c, jobs_, kv_);
    if (job.anchor_job >= first_new) jobs_.at(job.anchor_job).background = true;  // its own prefix job
    const int64_t id = jobs_.add(std::move(job));
    kv_.release(jobs_.at(id).blocks);  // add() took the job's reference; allocate()'s was the caller's
    return id;
}

bool KvManager::load_segment(SequenceState& s, size_t d, int32_t num_present) {
    const std::vector<kv::BlockId>& blocks = s.kv.segments[d].blocks;
    if (store_ == nullptr || !store_->load(s.request, d, blocks, num_present)) return false;
    kv_.publish(segment_seed(s, d), s.request.segments[d], blocks, true);
    return true;
}

void KvManager::check_integrity(const std::vector<const SequenceState*>& requests,
                                const DocumentRegistry& documents) const {
    kv_.check_integrity();
    std::vector<int32_t> refs(kv_.pool().num_blocks(), 0);
    for (const SequenceState* s : requests) {
        for (kv::BlockId b : s->kv.held) ++refs[b];
    }
    for (const auto& [id, job] : jobs_.all()) {
        LA_CHECK_MSG(job.num_users > 0, "segment job %lld has no users", (long long)id);
        for (kv::BlockId b : job.blocks) ++refs[b];
        for (kv::BlockId b : job.anchor_blocks) ++refs[b];
    }
    documents.for_each_pinned_block([&](kv::BlockId b) { ++refs[b]; });
    for (kv::BlockId b = 0; b < kv_.pool().num_blocks(); ++b) {
        LA_CHECK_MSG(refs[b] == kv_.pool().ref_count(b), "block %d: %d references held, pool counts %d", b, refs[b],
                     kv_.pool().ref_count(b));
    }
}

}  // namespace lazyattn::engine
