// ApiRenderer: one API's response shape (OpenAI completions and chat, llama-server's native
// /completion, Anthropic Messages, OpenAI Responses), fed by answer_generation()
// (generation_answer.h), which owns the waiting, the streaming loop, disconnects, metrics and
// errors for all of them. A renderer only turns results and events into bytes.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/request/rag_request.h"
#include "engine/request/request_handle.h"
#include "server/api_error.h"
#include "server/sse.h"

namespace lazyattn::server {

// One finished choice of a whole response.
struct ChoiceResult {
    const engine::RequestHandle* handle = nullptr;  // for prompt logprobs (echo)
    const engine::RagResult* result = nullptr;
};

struct PreparedRequest;

class ApiRenderer {
public:
    virtual ~ApiRenderer() = default;

    // The request as the front laid it out, before it is queued (its prompt tokens, choices,
    // output options): called once, before any other method.
    virtual void prepared(const PreparedRequest& request) { (void)request; }

    // The 200 body of a whole response: every choice ended with stop or length. `usage` counts
    // the shared prompt once and the completions summed.
    virtual std::string whole_body(const std::vector<ChoiceResult>& choices, const engine::RequestStats& usage) = 0;
    virtual std::string whole_content_type() const { return "application/json"; }

    // Streaming (text/event-stream). Each call appends bytes to `out`.
    // Before choice i's first event (OpenAI chat: the role chunk; Anthropic: message_start).
    virtual void stream_open(size_t choice, const engine::RequestHandle& handle, std::string& out) = 0;
    // A token event; e.text may be empty (held back: a partial character or a possible stop).
    virtual void stream_token(size_t choice, const engine::RequestEvent& e, std::string& out) = 0;
    // The prompt advanced (a kProgress event: only for a request with return_progress); after
    // stream_open. An API without llama-server's prompt_progress writes nothing.
    virtual void stream_progress(size_t choice, const engine::RequestEvent& e, std::string& out) {
        (void)choice, (void)e, (void)out;
    }
    // Choice i ended with stop or length; `stats` are its own.
    virtual void stream_end(size_t choice, const engine::RequestEvent& e, const engine::RequestStats& stats,
                            std::string& out) = 0;
    // Every choice ended normally (OpenAI: the usage chunk, then [DONE]; Anthropic: message_stop).
    virtual void stream_close(const engine::RequestStats& usage, std::string& out) = 0;
    // An error after the 200 went out; the stream ends after it.
    virtual void stream_error(const ApiError& e, std::string& out) { out += sse_event(error_body(e)); }
    // Written after a second with no news (and to notice a client that left).
    virtual std::string keep_alive() const { return sse_comment("waiting"); }

    // The body of an error answered with its HTTP status (before any 200).
    virtual std::string error_body(const ApiError& e) const { return e.to_json(); }
};

}  // namespace lazyattn::server
