// GenerationStream: one streamed generation of n choices, written as server-sent events through
// the transport's chunk sink on the HTTP worker thread, in the shape of the API's renderer
// (api_renderer.h). Each pump() writes everything the engine produced since the last call, for
// every choice: the renderer's opening, its token events, its end; when every choice ended, its
// close. An error ends the stream after the renderer's error event. A failed write means the
// client is gone: every choice is cancelled so its KV blocks return at the next step. While
// nothing happens (queued, long prefill) the renderer's keep-alive is written every second,
// which also notices a client that left early.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/request/request_handle.h"
#include "http/http_message.h"
#include "server/api_renderer.h"
#include "server/doorbell.h"
#include "server/server_context.h"
#include "server/token_clock.h"

namespace lazyattn::server {

class GenerationStream {
public:
    // `firsts[i]` is choice i's first event, already taken by the caller (which answers a request
    // that failed before producing anything with a plain error instead of a stream). `bell` rings
    // on every event of every choice. `chat` names the field of a context overflow in errors.
    GenerationStream(ServerContext& ctx, std::vector<std::shared_ptr<engine::RequestHandle>> handles,
                     std::vector<engine::RequestEvent> firsts, std::shared_ptr<Doorbell> bell,
                     std::shared_ptr<ApiRenderer> renderer, bool chat, double t_start_ms);
    ~GenerationStream();  // cancels the choices that never reached their end
    GenerationStream(const GenerationStream&) = delete;
    GenerationStream& operator=(const GenerationStream&) = delete;

    // Writes the whole stream; returns when it ended or the client is gone.
    void run(http::ChunkSink& sink);
    // The usage of all choices so far (prompt once, completions summed).
    engine::RequestStats usage() const;

private:
    struct Choice {
        std::shared_ptr<engine::RequestHandle> handle;
        std::optional<engine::RequestEvent> first;
        bool opened = false;
        bool finished = false;
        TokenClock clock;
    };

    bool pump(http::ChunkSink& sink);
    // Appends every event choice i has ready; true when it had any.
    bool drain(size_t i, std::string& out);
    void append_event(size_t i, const engine::RequestEvent& event, std::string& out);
    void append_end(size_t i, const engine::RequestEvent& event, std::string& out);
    bool all_finished() const;

    ServerContext& ctx_;
    std::vector<Choice> choices_;
    std::shared_ptr<Doorbell> bell_;
    std::shared_ptr<ApiRenderer> renderer_;
    bool chat_;
    double t_start_ms_;
    bool failed_ = false;  // an error event went out: the stream ends
    bool done_ = false;    // the close (or the error) written
    uint64_t seen_rings_ = 0;
    ActiveRequest active_;
};

// The usage of a response whose choices share one prompt: the prompt (and its cached tokens)
// counted once, the completions summed.
engine::RequestStats combined_usage(const std::vector<engine::RequestStats>& per_choice);

}  // namespace lazyattn::server
