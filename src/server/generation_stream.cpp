#include "server/generation_stream.h"

#include "core/timer.h"
#include "server/sse.h"

namespace lazyattn::server {
namespace {

constexpr int kKeepAliveMs = 1000;  // the keep-alive after this long without news
constexpr int kImminentMs = 5;      // the bell rang but the event was not queued yet: it is about to be

}  // namespace

engine::RequestStats combined_usage(const std::vector<engine::RequestStats>& per_choice) {
    engine::RequestStats u = per_choice.empty() ? engine::RequestStats{} : per_choice.front();
    for (size_t i = 1; i < per_choice.size(); ++i) {
        // The prompt is counted once; what ran for it is every choice's (each prefills its own
        // tail and recomputed rows; a document computed by a job they share counts once).
        u.num_generated += per_choice[i].num_generated;
        u.prefill_tokens += per_choice[i].prefill_tokens;
        u.recomputed_tokens += per_choice[i].recomputed_tokens;
    }
    return u;
}

GenerationStream::GenerationStream(ServerContext& ctx, std::vector<std::shared_ptr<engine::RequestHandle>> handles,
                                   std::vector<engine::RequestEvent> firsts, std::shared_ptr<Doorbell> bell,
                                   std::shared_ptr<ApiRenderer> renderer, bool chat, double t_start_ms)
    : ctx_(ctx),
      bell_(std::move(bell)),
      renderer_(std::move(renderer)),
      chat_(chat),
      t_start_ms_(t_start_ms),
      active_(ctx) {
    choices_.resize(handles.size());
    for (size_t i = 0; i < handles.size(); ++i) {
        choices_[i].handle = std::move(handles[i]);
        choices_[i].first = std::move(firsts[i]);
    }
}

GenerationStream::~GenerationStream() {
    for (Choice& c : choices_) {
        if (!c.finished) c.handle->cancel();
    }
}

engine::RequestStats GenerationStream::usage() const {
    std::vector<engine::RequestStats> per_choice;
    for (const Choice& c : choices_) per_choice.push_back(c.handle->stats());
    return combined_usage(per_choice);
}

bool GenerationStream::all_finished() const {
    for (const Choice& c : choices_) {
        if (!c.finished) return false;
    }
    return true;
}

void GenerationStream::run(http::ChunkSink& sink) {
    while (!done_) {
        if (!pump(sink)) {
            ctx_.metrics.count_disconnect();
            for (Choice& c : choices_) {
                if (c.finished) continue;
                c.handle->cancel();
                ctx_.metrics.record_request(c.handle->stats(), engine::FinishReason::kCancelled,
                                            (now_ms() - t_start_ms_) / 1000.0);
                c.finished = true;
            }
            return;
        }
    }
}

void GenerationStream::append_end(size_t i, const engine::RequestEvent& e, std::string& out) {
    Choice& c = choices_[i];
    c.finished = true;
    const engine::RequestStats stats = c.handle->stats();
    ctx_.metrics.record_request(stats, e.finish_reason, (now_ms() - t_start_ms_) / 1000.0);
    if (engine::finished_normally(e.finish_reason)) return renderer_->stream_end(i, e, stats, out);
    // Errors after the 200 went out travel in the stream, as OpenAI's do; the stream then ends.
    const ApiError err = e.finish_reason == engine::FinishReason::kCancelled ? cancelled_generation_error()
                                                                             : generation_error(e.status, chat_);
    renderer_->stream_error(err, out);
    failed_ = true;
}

void GenerationStream::append_event(size_t i, const engine::RequestEvent& e, std::string& out) {
    Choice& c = choices_[i];
    if (!c.opened) {
        c.opened = true;
        renderer_->stream_open(i, *c.handle, out);
    }
    if (e.kind == engine::RequestEvent::Kind::kFinished) return append_end(i, e, out);
    if (e.kind == engine::RequestEvent::Kind::kProgress) return renderer_->stream_progress(i, e, out);
    c.clock.on_event(ctx_.metrics, e);
    renderer_->stream_token(i, e, out);
}

bool GenerationStream::drain(size_t i, std::string& out) {
    Choice& c = choices_[i];
    bool any = false;
    if (c.first) {
        engine::RequestEvent first = std::move(*c.first);
        c.first.reset();
        append_event(i, first, out);
        any = true;
    }
    while (!c.finished && !failed_) {
        auto e = c.handle->next_event(0);
        if (!e) break;
        append_event(i, *e, out);
        any = true;
    }
    return any;
}

bool GenerationStream::pump(http::ChunkSink& sink) {
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
            if (!any) out = renderer_->keep_alive();
        } else {
            seen_rings_ = rings_before;
        }
        if (failed_) {
            done_ = true;
        } else if (all_finished()) {
            renderer_->stream_close(usage(), out);
            done_ = true;
        }
        return out.empty() || sink.write(out);
    } catch (...) {
        return false;  // ending the response cancels the request
    }
}

}  // namespace lazyattn::server
