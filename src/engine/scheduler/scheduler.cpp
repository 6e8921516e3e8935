// Scheduler: requests in and out, finishing, preemption, cancellation, statistics, integrity.
#include "engine/scheduler/scheduler.h"

#include <algorithm>
#include <climits>
#include <limits>
#include <random>

#include "core/check.h"
#include "core/timer.h"
#include "engine/request/context_overflow.h"
#include "engine/reuse/conditioning.h"
#include "engine/reuse/phase_kinds.h"

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
    if (condition_after < 0) return invalid_argument("condition-after must not be negative (0: never)");
    if (background_rows_per_step <= 0) return invalid_argument("background rows per step must be positive");
    if (max_background_queued <= 0 || max_background_queued_per_account <= 0) {
        return invalid_argument("the background queue's caps must be positive");
    }
    return kv_store_writer.validate();
}

Scheduler::Scheduler(const ModelFacts& model, backend::KvMemory& kv_memory, const EngineConfig& config,
                     KvStoreAdapter* store)
    : model_(model),
      config_(config),
      store_(store),
      kv_(model.description, kv_memory, config, store),
      documents_(
          kv_.kv_cache(), config, [this](const std::string& tenant) { return kv_.seeds_for(tenant).segment; },
          [this](const std::string& tenant, const std::vector<int32_t>& tokens,
                 const std::vector<kv::BlockId>& blocks) {
              if (store_ != nullptr) store_->write_pinned(tenant, tokens, blocks);
          }),
      background_({config.condition_after, config.max_background_queued, config.max_background_queued_per_account}) {
    documents_.set_conditioned_seed(conditioned_seed);
}

void Scheduler::index_documents(const std::string& tenant, std::span<const std::vector<int32_t>> documents) {
    for (const auto& d : documents) neighbours_.add(tenant, d);
}

Status Scheduler::validate(const RagRequest& r) const {
    const int32_t vocab = vocab_size(), ctx = context_length();
    if (r.tail.empty()) return invalid_argument("the request has no tail (question) tokens");
    int64_t total = int64_t(r.tail.size());
    for (const auto& s : r.segments) total += int64_t(s.size());
    if (total >= ctx) {
        return context_overflow({total, ctx});
    }
    auto bad = [vocab](const std::vector<int32_t>& t) {
        return std::any_of(t.begin(), t.end(), [vocab](int32_t x) { return x < 0 || x >= vocab; });
    };
    if (bad(r.tail)) return invalid_argument("token id outside the vocabulary in the tail");
    for (const auto& s : r.segments) {
        if (bad(s)) return invalid_argument("token id outside the vocabulary in a segment");
    }
    LA_RETURN_IF_ERROR(r.sampling.check_vocabulary(vocab));
    if (r.max_tokens < 0) return invalid_argument("max_tokens must be >= 0");
    LA_RETURN_IF_ERROR(r.reuse.validate());
    if (r.reuse.anchored && segments_are_blocks(config_.cache_mode) &&
        (!r.first_segment_is_preamble || r.segments.empty() || r.segments[0].empty())) {
        return invalid_argument(
            "anchored document encoding needs a preamble to encode the documents after (a chat template or system "
            "prompt); this request has none");
    }
    if (r.reuse.neighbours > 0 && segments_are_blocks(config_.cache_mode)) {
        // A conditioned document is encoded after up to max_conditioning_tokens of its neighbours.
        for (size_t d = 0; d < r.segments.size(); ++d) {
            const int64_t n = int64_t(r.segments[d].size()) + r.max_conditioning_tokens(d);
            if (r.conditioning_neighbours(d) > 0 && n >= ctx) {
                return out_of_range("document " + std::to_string(d) + " of " + std::to_string(r.segments[d].size()) +
                                    " tokens, encoded after up to " + std::to_string(r.max_conditioning_tokens(d)) +
                                    " tokens of its neighbours (neighbours=K), leaves no room in the context length " +
                                    std::to_string(ctx));
            }
        }
    }
    if (const auto m = measurement_for(r.reuse.recompute_select);
        m && segments_are_blocks(config_.cache_mode) && !model_.runs(*m)) {
        return invalid_argument(phase_kind(*m).refusal);
    }
    if (r.prompt_logprobs < -1 || r.prompt_logprobs > SamplingParams::kMaxLogprobs) {
        return invalid_argument("prompt_logprobs must be in [0, " + std::to_string(SamplingParams::kMaxLogprobs) +
                                "] (or -1: none)");
    }
    return r.sampling.validate();
}

void Scheduler::fit_default_max_tokens(RagRequest& r) const {
    if (!r.max_tokens_is_default || r.max_tokens <= 1) return;
    const ChainSeeds seeds = kv_.seeds_for(r.tenant);
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
    LA_RETURN_IF_ERROR(validate(request));
    return check_fits(request, kv_.seeds_for(request.tenant));
}

Status Scheduler::enqueue(RagRequest request, std::shared_ptr<RequestHandle> handle, bool want_all_tail_logits) {
    if (int32_t(waiting_.size()) >= config_.max_queue) {
        return unavailable("the queue is full (" + std::to_string(config_.max_queue) + " waiting requests)");
    }
    auto s = std::make_unique<SequenceState>();
    s->id = handle->id();
    s->seeds = kv_.seeds_for(request.tenant);
    s->handle = std::move(handle);
    s->want_all_tail_logits = want_all_tail_logits;
    for (const auto& seg : request.segments) s->history.insert(s->history.end(), seg.begin(), seg.end());
    s->history.insert(s->history.end(), request.tail.begin(), request.tail.end());
    if (request.prompt_logprobs >= 0) {
        s->prompt_logprobs.assign(request.tail.size(), std::numeric_limits<float>::quiet_NaN());
        s->prompt_top_logprobs.assign(request.tail.size(), {});
    }
    s->stats.num_prompt_tokens = request.num_prompt_tokens();
    s->stats.document_tokens = request.num_document_tokens();
    s->t_submit = now_ms();
    s->submit_step = step_count_;
    s->request = std::move(request);
    waiting_.push_back(std::move(s));
    return {};
}

void Scheduler::finish(SequenceState& s, FinishReason reason, Status status) {
    if (s.admitted) kv_.free(s);
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
    if (documents_listener_ && documents_.version() != documents_version_heard_) {
        documents_version_heard_ = documents_.version();
        documents_listener_();
    }
    ++(reason == FinishReason::kCancelled ? stats_.requests_cancelled
       : reason == FinishReason::kError   ? stats_.requests_failed
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
        finish(*s, FinishReason::kCancelled);
        any = true;
    }
    for (auto& s : waiting_) {
        if (!s->handle->cancel_requested() || s->handle->finished()) continue;
        finish(*s, FinishReason::kCancelled);
        any = true;
    }
    drop_finished();
    return any;
}

bool Scheduler::fail_unfittable() {
    // Pins taken since a request was queued may have left it no room: fail it now rather than
    // let it block the queue's head forever. Pins change rarely, so check only after a change.
    const uint64_t version = documents_.pins().version();
    if (version == checked_pin_version_) return false;
    checked_pin_version_ = version;
    bool any = false;
    for (auto& s : waiting_) {
        if (s->handle->finished()) continue;
        Status st = check_fits(s->request, s->seeds);
        if (st.ok()) continue;
        finish(*s, FinishReason::kError, std::move(st));
        any = true;
    }
    drop_finished();
    return any;
}

void Scheduler::preempt(SequenceState& s) {
    kv_.free(s);
    s.tail_logits.clear();  // recomputed from the start
    ++s.stats.preemptions;
    ++stats_.preemptions;
}

bool Scheduler::preempt_for(SequenceState* requester) {
    if (cancel_background()) return true;  // background work goes before any request
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
    s.segment_jobs = kv_.num_jobs_started();
    const kv::KvCache& cache = kv_.kv_cache();
    s.blocks_total = cache.pool().num_blocks();
    s.blocks_free = cache.num_free();
    s.blocks_used = cache.num_used();
    s.blocks_cached_free = cache.num_cached_free();
    s.blocks_pinned = documents_.pins().num_pinned();
    if (store_ != nullptr && store_->store() != nullptr) s.store = store_->store()->stats();
    s.background = background_.stats();
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
    std::vector<const SequenceState*> requests;
    for (const auto& s : running_) {
        LA_CHECK_MSG(s->admitted, "request %llu is running but not admitted", (unsigned long long)s->id);
        requests.push_back(s.get());
    }
    for (const auto& s : waiting_) LA_CHECK_MSG(s->kv.held.empty(), "a waiting request holds blocks");
    kv_.check_integrity(requests, documents_);
}

}  // namespace lazyattn::engine
