// CompletionStream: one streamed completion of n choices, written as server-sent events through
// the transport's chunk sink on the HTTP worker thread. Each pump() writes everything the engine
// produced since the last call, for every choice: chat opens each choice with an assistant-role
// chunk; completions with echo open with the prompt (and its logprobs); then content chunks, each
// carrying the logprobs of the tokens it completes; then an empty delta with the finish_reason.
// When every choice ended: the usage chunk when asked for, then "data: [DONE]". A failed write
// means the client is gone: every choice is cancelled so its KV blocks return at the next step.
// While nothing happens (queued, long prefill) a comment line is written every second, which
// also notices a client that left early.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/request/request_handle.h"
#include "http/http_message.h"
#include "server/doorbell.h"
#include "server/logprobs_json.h"
#include "server/openai_response.h"
#include "server/output_options.h"
#include "server/server_context.h"
#include "server/token_clock.h"

namespace lazyattn::server {

class CompletionStream {
public:
    // `firsts[i]` is choice i's first event, already taken by the route (which answers a request
    // that failed before producing anything with a plain error instead of a stream). `bell` rings
    // on every event of every choice.
    CompletionStream(ServerContext& ctx, std::vector<std::shared_ptr<engine::RequestHandle>> handles,
                     std::vector<engine::RequestEvent> firsts, std::shared_ptr<Doorbell> bell, ResponseMeta meta,
                     OutputOptions output, double t_start_ms);
    ~CompletionStream();  // cancels the choices that never reached their end
    CompletionStream(const CompletionStream&) = delete;
    CompletionStream& operator=(const CompletionStream&) = delete;

    // Writes the whole stream; returns when it ended or the client is gone.
    void run(http::ChunkSink& sink);
    // The usage of all choices so far (prompt once, completions summed).
    engine::RequestStats usage() const;

private:
    struct Choice {
        std::shared_ptr<engine::RequestHandle> handle;
        std::optional<engine::RequestEvent> first;
        bool opened = false;  // role chunk (chat) or echo (completions) written
        bool finished = false;
        TokenClock clock;
        TokenLogprobList pending;  // logprobs of tokens whose text has not gone out yet
        int64_t text_bytes = 0;    // bytes of text written (completions' text_offset)
    };

    bool pump(http::ChunkSink& sink);
    // Appends every event choice i has ready; true when it had any.
    bool drain(size_t i, std::string& out);
    void append_open(size_t i, std::string& out);
    void append_event(size_t i, const engine::RequestEvent& event, std::string& out);
    void append_end(size_t i, const engine::RequestEvent& event, std::string& out);
    nlohmann::json take_logprobs(Choice& c);
    bool all_finished() const;

    ServerContext& ctx_;
    std::vector<Choice> choices_;
    std::shared_ptr<Doorbell> bell_;
    ResponseMeta meta_;
    OutputOptions output_;
    double t_start_ms_;
    bool failed_ = false;  // an error event went out: the stream ends
    bool done_ = false;    // [DONE] written
    uint64_t seen_rings_ = 0;
    ActiveRequest active_;
};

}  // namespace lazyattn::server
