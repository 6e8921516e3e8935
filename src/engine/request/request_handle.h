// RequestHandle: what a caller holds for a submitted request. The engine thread pushes events
// (text pieces with their tokens, then one final event); any thread may read them, block for the
// next one, wait for the end, or ask for cancellation. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/request/rag_request.h"

namespace lazyattn::engine {

// Where a request stood when an event was made, on the engine's clock (llama-server's per-event
// `timings` and `prompt_progress`). Zero where the event does not know (held-back text).
struct EventTimings {
    int32_t prompt_tokens = 0;  // the whole prompt
    int32_t cached = 0;         // of those, served from the cache at admission
    int32_t processed = 0;      // of those, whose KV is in place (the cached ones included)
    double prompt_ms = 0;       // admission to this event while the prompt runs, else to the first token
    int32_t generated = 0;      // tokens sampled so far
    double decode_ms = 0;       // the first token to this event
};

struct RequestEvent {
    // kProgress: the prompt advanced (only for a request with RagRequest::report_progress);
    // `timings` says how far.
    enum class Kind { kToken, kFinished, kProgress };
    Kind kind = Kind::kToken;
    int32_t token_id = -1;     // kToken: the sampled token
    std::string text;          // kToken: text this token completed (may be empty)
    float logprob = 0;         // kToken with a token, when the request asked for logprobs: log P(token)
    TopLogprobs top_logprobs;  // kToken: (token id, logprob), best first; empty unless asked
    FinishReason finish_reason = FinishReason::kNone;  // kFinished: why
    Status status;                                     // kFinished with kError: why
    std::string stop_word;                             // kFinished with kStop by a stop string: which
    EventTimings timings;                              // kToken with a token, kProgress
};

class RequestHandle {
public:
    using Callback = std::function<void(const RequestEvent&)>;
    explicit RequestHandle(uint64_t id, Callback callback = {}) : id_(id), callback_(std::move(callback)) {}

    uint64_t id() const { return id_; }
    // Asks the engine to stop this request; its blocks return at the next step boundary.
    void cancel() { cancel_requested_.store(true); }
    bool cancel_requested() const { return cancel_requested_.load(); }

    // Blocks until an event is available (or the timeout passes: nullopt).
    std::optional<RequestEvent> next_event(int timeout_ms = -1);
    // Blocks until the request has finished; returns the whole result.
    RagResult wait();
    bool finished() const;
    RequestStats stats() const;

    // Logits at every tail prompt position (only when the request asked for them).
    std::vector<float> tail_logits() const;

    // Engine side.
    // `logprobs`: the token's logprobs when the request asked for them (also appended to the
    // result's token_logprobs / top_logprobs); null otherwise.
    // `timings`: where the request stands (RequestEvent::timings).
    void push_token(int32_t token, std::string text, TokenLogprobs* logprobs = nullptr,
                    const EventTimings& timings = {});
    // The prompt advanced (RagRequest::report_progress): a kProgress event.
    void push_progress(const EventTimings& timings);
    void push_text(std::string text);  // held-back text released at the end (no new token)
    void set_tail_logits(std::vector<float> logits);
    // Prompt logprobs (RagRequest::prompt_logprobs), set before finish().
    void set_prompt_logprobs(std::vector<float> logprobs, std::vector<TopLogprobs> top);
    // The prompt logprobs published so far (once the prompt has run; see RagRequest::prompt_logprobs).
    void prompt_logprobs(std::vector<float>* logprobs, std::vector<TopLogprobs>* top) const;
    void finish(FinishReason reason, const RequestStats& stats, Status status = {});
    // The stop string that is about to end the request (set before finish()).
    void set_stop_word(std::string word);

private:
    const uint64_t id_;
    Callback callback_;
    std::atomic<bool> cancel_requested_{false};
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<RequestEvent> events_;
    RagResult result_;
    std::vector<float> tail_logits_;
    Status status_;
    bool finished_ = false;
};

}  // namespace lazyattn::engine
