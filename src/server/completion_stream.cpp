#include "server/completion_stream.h"

#include <cmath>

#include "core/timer.h"
#include "server/sse.h"

namespace lazyattn::server {
namespace {

constexpr int kKeepAliveMs = 1000;  // a comment line after this long without news
constexpr int kImminentMs = 5;      // the bell rang but the event was not queued yet: it is about to be

}  // namespace

CompletionStream::CompletionStream(ServerContext& ctx, std::vector<std::shared_ptr<engine::RequestHandle>> handles,
                                   std::vector<engine::RequestEvent> firsts, std::shared_ptr<Doorbell> bell,
                                   ResponseMeta meta, OutputOptions output, double t_start_ms)
    : ctx_(ctx),
      bell_(std::move(bell)),
      meta_(std::move(meta)),
      output_(std::move(output)),
      t_start_ms_(t_start_ms),
      active_(ctx) {
    choices_.resize(handles.size());
    for (size_t i = 0; i < handles.size(); ++i) {
        choices_[i].handle = std::move(handles[i]);
        choices_[i].first = std::move(firsts[i]);
    }
}

CompletionStream::~CompletionStream() {
    for (Choice& c : choices_) {
        if (!c.finished) c.handle->cancel();
    }
}

engine::RequestStats CompletionStream::usage() const {
    std::vector<engine::RequestStats> per_choice;
    for (const Choice& c : choices_) per_choice.push_back(c.handle->stats());
    return combined_usage(per_choice);
}

bool CompletionStream::all_finished() const {
    for (const Choice& c : choices_) {
        if (!c.finished) return false;
    }
    return true;
}

void CompletionStream::run(http::ChunkSink& sink) {
    while (!done_) {
        if (!pump(sink)) {
            ctx_.metrics.count_disconnect();
            for (Choice& c : choices_) {
                if (c.finished) continue;
                c.handle->cancel();
                ctx_.metrics.record_request(c.handle->stats(), "cancelled", (now_ms() - t_start_ms_) / 1000.0);
                c.finished = true;
            }
            return;
        }
    }
}

nlohmann::json CompletionStream::take_logprobs(Choice& c) {
    if (!output_.logprobs) return nullptr;
    nlohmann::json j = meta_.chat ? chat_logprobs_json(ctx_.tokenizer, c.pending)
                                  : completion_logprobs_json(ctx_.tokenizer, c.pending, c.text_bytes);
    c.pending.clear();
    return j;
}

void CompletionStream::append_open(size_t i, std::string& out) {
    Choice& c = choices_[i];
    c.opened = true;
    if (meta_.chat) {
        out += sse_event(chunk_body(meta_, int(i), "", true, "", output_.include_usage));
        return;
    }
    if (!output_.echo) return;
    // The echoed prompt with its tokens' logprobs; they are published once the prompt has run,
    // which the first event (a token, or the end of a max_tokens 0 request) guarantees.
    if (output_.logprobs) append_prompt_logprobs(*c.handle, output_.echo_tokens, c.pending);
    nlohmann::json lp = take_logprobs(c);
    out += sse_event(chunk_body(meta_, int(i), output_.echo_text, false, "", output_.include_usage, lp));
    c.text_bytes += int64_t(output_.echo_text.size());
}

void CompletionStream::append_end(size_t i, const engine::RequestEvent& e, std::string& out) {
    Choice& c = choices_[i];
    c.finished = true;
    const engine::RequestStats stats = c.handle->stats();
    ctx_.metrics.record_request(stats, e.finish_reason, (now_ms() - t_start_ms_) / 1000.0);
    if (e.finish_reason == "stop" || e.finish_reason == "length") {
        nlohmann::json lp = c.pending.empty() ? nlohmann::json(nullptr) : take_logprobs(c);
        out += sse_event(chunk_body(meta_, int(i), "", false, e.finish_reason, output_.include_usage, lp));
        return;
    }
    // Errors after the 200 went out travel in the stream, as OpenAI's do; the stream then ends.
    ApiError err =
        e.finish_reason == "cancelled" ? cancelled_generation_error() : generation_error(e.status, meta_.chat);
    out += sse_event(err.to_json());
    failed_ = true;
}

void CompletionStream::append_event(size_t i, const engine::RequestEvent& e, std::string& out) {
    Choice& c = choices_[i];
    if (!c.opened) append_open(i, out);
    if (e.kind == engine::RequestEvent::Kind::kFinished) return append_end(i, e, out);
    c.clock.on_event(ctx_.metrics, e);
    if (output_.logprobs && e.token_id >= 0) c.pending.append(e.token_id, e.logprob, e.top_logprobs);
    if (e.text.empty()) return;  // held back (a partial character or a possible stop string)
    nlohmann::json lp = take_logprobs(c);
    out += sse_event(chunk_body(meta_, int(i), e.text, false, "", output_.include_usage, lp));
    c.text_bytes += int64_t(e.text.size());
}

bool CompletionStream::drain(size_t i, std::string& out) {
    Choice& c = choices_[i];
    bool any = false;
    if (c.first) {
        engine::RequestEvent first = std::move(*c.first);
        c.first.reset();
        append_event(i, first, out);
        any = true;
    }
    while (!c.finished) {
        auto e = c.handle->next_event(0);
        if (!e) break;
        append_event(i, *e, out);
        any = true;
    }
    return any;
}

bool CompletionStream::pump(http::ChunkSink& sink) {
    try {
        std::string out;
        const uint64_t rings_before = bell_->rings();
        bool any = false;
        for (size_t i = 0; i < choices_.size() && !failed_; ++i) any = drain(i, out) || any;
        if (!any && !failed_ && !all_finished()) {
            // Nothing ready: wait for the bell (a ring since rings_before means an event is being
            // queued right now), then look again.
            uint64_t seen = seen_rings_;
            bell_->wait(seen, rings_before > seen_rings_ ? kImminentMs : kKeepAliveMs);
            seen_rings_ = seen;
            for (size_t i = 0; i < choices_.size() && !failed_; ++i) any = drain(i, out) || any;
            if (!any) out = sse_comment("waiting");
        } else {
            seen_rings_ = rings_before;
        }
        if (failed_ || all_finished()) {
            if (!failed_ && output_.include_usage) out += sse_event(usage_chunk_body(meta_, usage()));
            out += kSseDone;
            done_ = true;
        }
        return out.empty() || sink.write(out);
    } catch (...) {
        return false;  // ending the response cancels the request
    }
}

}  // namespace lazyattn::server
