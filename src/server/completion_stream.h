// CompletionStream: one streamed completion, written as server-sent events through the
// transport's chunk sink on the HTTP worker thread. Each pump() writes everything the engine produced
// since the last call as chunks (chat: a first chunk with the assistant role, then content deltas,
// then an empty delta with finish_reason; completions: text chunks then the finish_reason), then
// the usage chunk when asked for, then "data: [DONE]". A failed write means the client is gone:
// the request is cancelled so its KV blocks go back to the pool at the next step. While nothing
// happens (queued, long prefill) a comment line is written every second, which also notices a
// client that left early.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "engine/request_handle.h"
#include "http/http_message.h"
#include "server/openai_response.h"
#include "server/server_context.h"
#include "server/token_clock.h"

namespace lazyattn::server {

class CompletionStream {
public:
    // `first` is the request's first event, already taken by the route (which answers a request
    // that failed before producing anything with a plain error instead of a stream).
    CompletionStream(ServerContext& ctx, std::shared_ptr<engine::RequestHandle> handle, ResponseMeta meta,
                     bool include_usage, engine::RequestEvent first, double t_start_ms);
    ~CompletionStream();  // cancels the request if the stream never reached its end
    CompletionStream(const CompletionStream&) = delete;
    CompletionStream& operator=(const CompletionStream&) = delete;

    // Writes the whole stream; returns when it ended or the client is gone (the request is then
    // cancelled).
    void run(http::ChunkSink& sink);

private:
    // One write of everything produced so far (or a keep-alive comment after a second of
    // silence); false when the client is gone.
    bool pump(http::ChunkSink& sink);
    void append_event(const engine::RequestEvent& event, std::string& out);
    void append_end(const engine::RequestEvent& event, std::string& out);

    ServerContext& ctx_;
    std::shared_ptr<engine::RequestHandle> handle_;
    ResponseMeta meta_;
    bool include_usage_;
    std::optional<engine::RequestEvent> first_;
    double t_start_ms_;
    TokenClock clock_;
    bool role_sent_ = false;
    bool finished_ = false;
    ActiveRequest active_;
};

}  // namespace lazyattn::server
