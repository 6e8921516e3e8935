#include "engine/request/request_handle.h"

#include <chrono>

namespace lazyattn::engine {

std::optional<RequestEvent> RequestHandle::next_event(int timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] { return !events_.empty(); };
    if (timeout_ms < 0) {
        cv_.wait(lock, ready);
    } else if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) {
        return std::nullopt;
    }
    RequestEvent e = std::move(events_.front());
    events_.pop_front();
    return e;
}

RagResult RequestHandle::wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return finished_; });
    return result_;
}

bool RequestHandle::finished() const {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_;
}

RequestStats RequestHandle::stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    return result_.stats;
}

void RequestHandle::push_token(int32_t token, std::string text, TokenLogprobs* logprobs, const EventTimings& timings) {
    RequestEvent e;
    e.kind = RequestEvent::Kind::kToken;
    e.token_id = token;
    e.text = std::move(text);
    e.timings = timings;
    if (logprobs != nullptr) {
        e.logprob = logprobs->logprob;
        e.top_logprobs = std::move(logprobs->top);
    }
    if (callback_) callback_(e);
    std::lock_guard<std::mutex> lock(mu_);
    if (token >= 0) result_.token_ids.push_back(token);
    if (logprobs != nullptr) {
        result_.token_logprobs.push_back(e.logprob);
        result_.top_logprobs.push_back(e.top_logprobs);
    }
    result_.text += e.text;
    events_.push_back(std::move(e));
    cv_.notify_all();
}

void RequestHandle::push_progress(const EventTimings& timings) {
    RequestEvent e;
    e.kind = RequestEvent::Kind::kProgress;
    e.timings = timings;
    if (callback_) callback_(e);
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(e));
    cv_.notify_all();
}

void RequestHandle::push_text(std::string text) {
    if (text.empty()) return;
    push_token(-1, std::move(text));
}

void RequestHandle::set_tail_logits(std::vector<float> logits) {
    std::lock_guard<std::mutex> lock(mu_);
    tail_logits_ = std::move(logits);
}

void RequestHandle::set_prompt_logprobs(std::vector<float> logprobs, std::vector<TopLogprobs> top) {
    std::lock_guard<std::mutex> lock(mu_);
    result_.prompt_token_logprobs = std::move(logprobs);
    result_.prompt_top_logprobs = std::move(top);
}

void RequestHandle::prompt_logprobs(std::vector<float>* logprobs, std::vector<TopLogprobs>* top) const {
    std::lock_guard<std::mutex> lock(mu_);
    *logprobs = result_.prompt_token_logprobs;
    *top = result_.prompt_top_logprobs;
}

std::vector<float> RequestHandle::tail_logits() const {
    std::lock_guard<std::mutex> lock(mu_);
    return tail_logits_;
}

void RequestHandle::set_stop_word(std::string word) {
    std::lock_guard<std::mutex> lock(mu_);
    result_.stop_word = std::move(word);
}

void RequestHandle::finish(FinishReason reason, const RequestStats& stats, Status status) {
    RequestEvent e;
    e.kind = RequestEvent::Kind::kFinished;
    e.finish_reason = reason;
    e.status = status;
    {
        // The result is complete before anyone hears of the end: a callback that wakes a
        // stream which then reads stats() must see this request's figures, not zeros.
        std::lock_guard<std::mutex> lock(mu_);
        e.stop_word = result_.stop_word;
        result_.finish_reason = reason;
        result_.stats = stats;
        result_.status = status;
        status_ = std::move(status);
    }
    if (callback_) callback_(e);
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
    events_.push_back(std::move(e));
    cv_.notify_all();
}

}  // namespace lazyattn::engine
