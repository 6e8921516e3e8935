// Scheduler: requests in and out, finishing, preemption, cancellation, statistics, integrity.
#include "engine/scheduler.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <random>

#include "core/check.h"
#include "core/timer.h"

namespace lazyattn::engine {

Status EngineConfig::validate() const {
    if (block_size <= 0 || block_size > 1024) return invalid_argument("block size must be in [1, 1024]");
    if (kv_cache_mb <= 0) return invalid_argument("KV cache size must be positive");
    if (kv_num_blocks < 0) return invalid_argument("KV block count must not be negative");
    if (max_batch_tokens <= 0) return invalid_argument("max batch tokens must be positive");
    if (max_prefill_while_decoding < 0) {
        return invalid_argument("the prefill rows of a step with decode rows must not be negative (0: no cap)");
    }
    if (max_num_seqs <= 0) return invalid_argument("max sequences must be positive");
    if (max_queue <= 0) return invalid_argument("queue size must be positive");
    if (max_model_len < 0) return invalid_argument("the context length cap must not be negative");
    if (!(max_pinned_fraction >= 0 && max_pinned_fraction <= 1)) {
        return invalid_argument("the pinned share of the KV pool must be in [0, 1]");
    }
    if (max_pinned_blocks_per_tenant < 0) return invalid_argument("the per-tenant pin quota must not be negative");
    return {};
}

namespace {

uint64_t random_key() {
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ uint64_t(rd());
}

}  // namespace

Scheduler::Scheduler(const ModelFacts& model, backend::KvMemory& kv_memory, const EngineConfig& config)
    : model_(model), config_(config), kv_memory_(kv_memory), kv_(kv_memory.shape()), pins_(kv_.pool().num_blocks()) {
    const std::string& fingerprint = model.description;
    const bool rotated = keys_stored_rotated(config.cache_mode);
    const uint64_t key = config.cache_hash_key != 0 ? config.cache_hash_key : random_key();
    segment_seed_ = kv::hash_seed(rotated ? "segment/rotated" : "segment/raw", fingerprint, key);
    tail_seed_ = kv::hash_seed(rotated ? "tail/rotated" : "tail/raw", fingerprint, key);
    prefix_seed_ = kv::hash_seed("prefix", fingerprint, key);
    status_ = open_store();
}

ChainSeeds Scheduler::seeds_for(const std::string& tenant) const {
    return {kv::hash_salt(segment_seed_, tenant), kv::hash_salt(tail_seed_, tenant),
            kv::hash_salt(prefix_seed_, tenant)};
}

Status Scheduler::validate(const RagRequest& r) const {
    const int32_t vocab = vocab_size(), ctx = context_length();
    if (r.tail.empty()) return invalid_argument("the request has no tail (question) tokens");
    int64_t total = int64_t(r.tail.size());
    for (const auto& s : r.segments) total += int64_t(s.size());
    if (total >= ctx) {
        return out_of_range("prompt of " + std::to_string(total) +
                            " tokens (documents and question) leaves no room in the context length " +
                            std::to_string(ctx));
    }
    auto bad = [vocab](const std::vector<int32_t>& t) {
        return std::any_of(t.begin(), t.end(), [vocab](int32_t x) { return x < 0 || x >= vocab; });
    };
    if (bad(r.tail)) return invalid_argument("token id outside the vocabulary in the tail");
    for (const auto& s : r.segments) {
        if (bad(s)) return invalid_argument("token id outside the vocabulary in a segment");
    }
    for (const auto& [id, bias] : r.sampling.logit_bias) {
        if (id < 0 || id >= vocab) {
            return invalid_argument("logit_bias names token id " + std::to_string(id) +
                                    ", outside the vocabulary [0, " + std::to_string(vocab) + ")");
        }
    }
    if (r.max_tokens < 0) return invalid_argument("max_tokens must be >= 0");
    LA_RETURN_IF_ERROR(r.reuse.validate());
    if (r.reuse.anchored && segments_are_blocks(config_.cache_mode) &&
        (!r.first_segment_is_preamble || r.segments.empty() || r.segments[0].empty())) {
        return invalid_argument(
            "anchored document encoding needs a preamble to encode the documents after (a chat template or system "
            "prompt); this request has none");
    }
    if (r.prompt_logprobs < -1 || r.prompt_logprobs > SamplingParams::kMaxLogprobs) {
        return invalid_argument("prompt_logprobs must be in [0, " + std::to_string(SamplingParams::kMaxLogprobs) +
                                "] (or -1: none)");
    }
    return r.sampling.validate();
}

int64_t Scheduler::blocks_needed(const RagRequest& r) const {
    // Worst case for one request alone: every segment computed (twice for block-attn's copies),
    // plus the tail grown to its last generated token.
    const int32_t bs = kv_.block_size();
    const int64_t ctx = context_length();
    int64_t blocks = 0, total = int64_t(r.tail.size());
    for (size_t d = 0; d < r.segments.size(); ++d) {
        const int64_t n = (int64_t(r.segments[d].size()) + bs - 1) / bs;
        if (segments_are_blocks(config_.cache_mode)) {
            blocks += n * (config_.cache_mode == CacheMode::kBlockAttn ? 2 : 1);
            blocks += (r.recompute_tokens(d, bs) + bs - 1) / bs;
        }
        total += int64_t(r.segments[d].size());
    }
    const int64_t tail = segments_are_blocks(config_.cache_mode) ? int64_t(r.tail.size()) : total;
    const int64_t grown = std::min(tail + r.max_tokens, ctx);
    return blocks + (grown + bs - 1) / bs;
}

Status Scheduler::check_fits(const RagRequest& r, const ChainSeeds& seeds) const {
    int64_t need = blocks_needed(r);
    const int32_t total = kv_.pool().num_blocks(), pinned = pins_.num_pinned();
    if (pinned > 0 && segments_are_blocks(config_.cache_mode)) {
        // The tenant's pinned documents are in the pool already (within the pinned blocks).
        for (size_t d = 0; d < r.segments.size(); ++d) {
            const auto& seg = r.segments[d];
            if (seg.empty() || std::find(r.segments.begin(), r.segments.begin() + d, seg) != r.segments.begin() + d) {
                continue;
            }
            need -= pins_.document_blocks(kv::hash_chain(seeds.segment, seg, kv_.block_size()).back());
        }
    }
    if (need <= total - pinned) return {};
    return resource_exhausted("request needs up to " + std::to_string(need) + " KV blocks but the whole pool has " +
                              std::to_string(total) + ", of which " + std::to_string(pinned) +
                              " are pinned by documents, leaving " + std::to_string(total - pinned) +
                              " (raise --kv-cache-mb, unpin documents or shorten the request)");
}

void Scheduler::fit_default_max_tokens(RagRequest& r) const {
    if (!r.max_tokens_is_default || r.max_tokens <= 1) return;
    const ChainSeeds seeds = seeds_for(r.tenant);
    if (check_fits(r, seeds).ok()) return;
    // The largest default that fits (the blocks needed grow with max_tokens); none fitting leaves
    // it for check_request to refuse.
    const int32_t wanted = r.max_tokens;
    int32_t lo = 0, hi = wanted;  // lo fits (or is 0), hi does not
    while (hi - lo > 1) {
        const int32_t mid = lo + (hi - lo) / 2;
        r.max_tokens = mid;
        (check_fits(r, seeds).ok() ? lo : hi) = mid;
    }
    r.max_tokens = lo > 0 ? lo : wanted;
}

Status Scheduler::check_request(const RagRequest& request) const {
    LA_RETURN_IF_ERROR(status_);
    if (kv_.pool().num_blocks() == 0) return resource_exhausted("the KV pool has no blocks");
    LA_RETURN_IF_ERROR(validate(request));
    return check_fits(request, seeds_for(request.tenant));
}

Status Scheduler::enqueue(RagRequest request, std::shared_ptr<RequestHandle> handle, bool want_all_tail_logits) {
    if (int32_t(waiting_.size()) >= config_.max_queue) {
        return unavailable("the queue is full (" + std::to_string(config_.max_queue) + " waiting requests)");
    }
    auto s = std::make_unique<SequenceState>();
    s->id = handle->id();
    s->seeds = seeds_for(request.tenant);
    s->handle = std::move(handle);
    s->want_all_tail_logits = want_all_tail_logits;
    s->sampler = std::make_unique<Sampler>(request.sampling);
    for (const auto& seg : request.segments) s->history.insert(s->history.end(), seg.begin(), seg.end());
    s->history.insert(s->history.end(), request.tail.begin(), request.tail.end());
    if (request.prompt_logprobs >= 0) {
        s->prompt_logprobs.assign(request.tail.size(), std::numeric_limits<float>::quiet_NaN());
        s->prompt_top_logprobs.assign(request.tail.size(), {});
    }
    s->stats.num_prompt_tokens = request.num_prompt_tokens();
    s->t_submit = now_ms();
    s->submit_step = step_count_;
    s->request = std::move(request);
    waiting_.push_back(std::move(s));
    return {};
}

void Scheduler::finish(SequenceState& s, const std::string& reason, Status status) {
    if (s.admitted) release_kv(s);
    const double t_end = now_ms();
    RequestStats& st = s.stats;
    st.num_generated = s.num_generated;
    st.queue_ms = (s.admit_step >= 0 ? s.t_admit : t_end) - s.t_submit;
    st.ttft_ms = (s.num_generated > 0 ? s.t_first_token : t_end) - s.t_submit;
    st.decode_ms = s.num_generated > 0 ? t_end - s.t_first_token : 0.0;
    st.decode_tok_per_s = st.decode_ms > 0 ? 1000.0 * std::max(0, s.num_generated - 1) / st.decode_ms : 0.0;
    if (s.want_all_tail_logits) s.handle->set_tail_logits(std::move(s.tail_logits));
    if (s.request.prompt_logprobs >= 0) {
        s.handle->set_prompt_logprobs(std::move(s.prompt_logprobs), std::move(s.prompt_top_logprobs));
    }
    if (documents_listener_ && documents_version_ != documents_version_heard_) {
        documents_version_heard_ = documents_version_;
        documents_listener_();
    }
    ++(reason == "cancelled" ? stats_.requests_cancelled
       : reason == "error"   ? stats_.requests_failed
                             : stats_.requests_finished);
    s.handle->finish(reason, st, std::move(status));
}

void Scheduler::drop_finished() {
    auto done = [](const std::unique_ptr<SequenceState>& s) { return s->handle->finished(); };
    running_.erase(std::remove_if(running_.begin(), running_.end(), done), running_.end());
    waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), done), waiting_.end());
}

bool Scheduler::reap_cancelled() {
    bool any = false;
    for (auto& s : running_) {
        if (!s->handle->cancel_requested() || s->handle->finished()) continue;
        finish(*s, "cancelled");
        any = true;
    }
    for (auto& s : waiting_) {
        if (!s->handle->cancel_requested() || s->handle->finished()) continue;
        finish(*s, "cancelled");
        any = true;
    }
    drop_finished();
    return any;
}

bool Scheduler::fail_unfittable() {
    // Pins taken since a request was queued may have left it no room: fail it now rather than
    // let it block the queue's head forever. Pins change rarely, so check only after a change.
    const uint64_t version = pins_.version();
    if (version == checked_pin_version_) return false;
    checked_pin_version_ = version;
    bool any = false;
    for (auto& s : waiting_) {
        if (s->handle->finished()) continue;
        Status st = check_fits(s->request, s->seeds);
        if (st.ok()) continue;
        finish(*s, "error", std::move(st));
        any = true;
    }
    drop_finished();
    return any;
}

void Scheduler::preempt(SequenceState& s) {
    release_kv(s);
    s.tail_logits.clear();  // recomputed from the start
    ++s.stats.preemptions;
    ++stats_.preemptions;
}

bool Scheduler::preempt_for(SequenceState* requester) {
    // The most recently admitted request goes back to the front of the queue (recompute).
    if (running_.empty()) return false;
    auto victim = std::max_element(running_.begin(), running_.end(),
                                   [](const auto& a, const auto& b) { return a->admit_order < b->admit_order; });
    const bool self = victim->get() == requester;
    preempt(**victim);
    waiting_.push_front(std::move(*victim));
    running_.erase(victim);
    return !self;
}

SchedulerStats Scheduler::stats() const {
    SchedulerStats s = stats_;
    s.steps = step_count_;
    s.num_waiting = int32_t(waiting_.size());
    s.num_running = int32_t(running_.size());
    s.blocks_total = kv_.pool().num_blocks();
    s.blocks_free = kv_.num_free();
    s.blocks_used = kv_.num_used();
    s.blocks_cached_free = kv_.num_cached_free();
    s.blocks_pinned = pins_.num_pinned();
    if (store_ != nullptr) s.store = store_->stats();
    return s;
}

const SequenceState* Scheduler::find(uint64_t id) const {
    for (const auto& s : running_) {
        if (s->id == id) return s.get();
    }
    for (const auto& s : waiting_) {
        if (s->id == id) return s.get();
    }
    return nullptr;
}

void Scheduler::check_integrity() const {
    kv_.check_integrity();
    std::vector<int32_t> refs(kv_.pool().num_blocks(), 0);
    for (const auto& s : running_) {
        LA_CHECK_MSG(s->admitted, "request %llu is running but not admitted", (unsigned long long)s->id);
        for (kv::BlockId b : s->kv.held) ++refs[b];
    }
    for (const auto& s : waiting_) LA_CHECK_MSG(s->kv.held.empty(), "a waiting request holds blocks");
    for (const auto& [id, job] : jobs_) {
        LA_CHECK_MSG(job.num_users > 0, "segment job %lld has no users", (long long)id);
        for (kv::BlockId b : job.blocks) ++refs[b];
        for (kv::BlockId b : job.anchor_blocks) ++refs[b];
    }
    for (const auto& [tenant, docs] : documents_) {
        for (const auto& [id, doc] : docs) {
            LA_CHECK_MSG((doc.pin_count > 0) == !doc.pinned_blocks.empty(), "document %s: %d pins, %zu blocks",
                         id.c_str(), doc.pin_count, doc.pinned_blocks.size());
            for (kv::BlockId b : doc.pinned_blocks) ++refs[b];
        }
    }
    for (kv::BlockId b = 0; b < kv_.pool().num_blocks(); ++b) {
        LA_CHECK_MSG(refs[b] == kv_.pool().ref_count(b), "block %d: %d references held, pool counts %d", b, refs[b],
                     kv_.pool().ref_count(b));
    }
}

}  // namespace lazyattn::engine
