#include "server/completion_stream.h"

#include "core/timer.h"
#include "server/sse.h"

namespace lazyattn::server {

CompletionStream::CompletionStream(ServerContext& ctx, std::shared_ptr<engine::RequestHandle> handle, ResponseMeta meta,
                                   bool include_usage, engine::RequestEvent first, double t_start_ms)
    : ctx_(ctx),
      handle_(std::move(handle)),
      meta_(std::move(meta)),
      include_usage_(include_usage),
      first_(std::move(first)),
      t_start_ms_(t_start_ms),
      active_(ctx) {}

CompletionStream::~CompletionStream() {
    if (!finished_) handle_->cancel();
}

void CompletionStream::run(http::ChunkSink& sink) {
    while (!finished_) {
        if (!pump(sink)) {
            handle_->cancel();
            ctx_.metrics.count_disconnect();
            if (!finished_) ctx_.metrics.record_request(handle_->stats(), "cancelled", (now_ms() - t_start_ms_) / 1000.0);
            return;
        }
    }
}

void CompletionStream::append_end(const engine::RequestEvent& e, std::string& out) {
    finished_ = true;
    const engine::RequestStats stats = handle_->stats();
    if (e.finish_reason == "stop" || e.finish_reason == "length") {
        out += sse_event(chunk_body(meta_, "", false, e.finish_reason, include_usage_));
        if (include_usage_) out += sse_event(usage_chunk_body(meta_, stats));
    } else {
        // Errors after the 200 went out travel in the stream, as OpenAI's do.
        ApiError err = e.finish_reason == "cancelled" ? cancelled_generation_error()
                                                      : generation_error(e.status, meta_.chat);
        out += sse_event(err.to_json());
    }
    ctx_.metrics.record_request(stats, e.finish_reason, (now_ms() - t_start_ms_) / 1000.0);
    out += kSseDone;
}

void CompletionStream::append_event(const engine::RequestEvent& e, std::string& out) {
    if (e.kind == engine::RequestEvent::Kind::kFinished) {
        append_end(e, out);
        return;
    }
    clock_.on_event(ctx_.metrics, e);
    if (!e.text.empty()) out += sse_event(chunk_body(meta_, e.text, false, "", include_usage_));
}

bool CompletionStream::pump(http::ChunkSink& sink) {
    try {
        std::string out;
        if (!role_sent_ && meta_.chat) out += sse_event(chunk_body(meta_, "", true, "", include_usage_));
        role_sent_ = true;
        if (first_) {
            append_event(*first_, out);
            first_.reset();
        }
        if (!finished_ && out.empty()) {
            auto e = handle_->next_event(1000);
            if (e) {
                append_event(*e, out);
            } else {
                out = sse_comment("waiting");
            }
        }
        while (!finished_) {  // everything else already produced goes out in the same write
            auto e = handle_->next_event(0);
            if (!e) break;
            append_event(*e, out);
        }
        return out.empty() || sink.write(out);
    } catch (...) {
        return false;  // ending the response cancels the request
    }
}

}  // namespace lazyattn::server
