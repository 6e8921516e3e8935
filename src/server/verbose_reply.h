// VerboseReply: llama-server's `__verbose` object, added to OpenAI completions and chat replies
// when the server runs with --verbose (ServerConfig::verbose_replies) or the request sets
// `verbose: true`, and never when it sets false. It is what the native /completion answers for the
// same generation (native_renderer.h): content, the prompt as the model read it (special tokens
// shown), generation_settings, stop_type, tokens_cached, timings, ... Whole replies carry one per
// choice's result; streams carry it on each choice's finishing chunk.
//
// What it exposes is the request's own: its messages and documents as the template laid them out
// (a document named by id is the caller's tenant's own), the server's sampling settings (also in
// /props) and the timings. Nothing of another request. Off unless asked for, as llama-server.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/request/rag_request.h"
#include "engine/request/request_handle.h"
#include "server/native_renderer.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::server {

struct PreparedRequest;

class VerboseReply {
public:
    VerboseReply(const tokenizer::Tokenizer& tokenizer, std::string model);

    // The request as laid out (its prompt, settings, choices); before any other call.
    void prepared(const PreparedRequest& request);
    // A whole reply's choice `index`.
    nlohmann::json whole(const engine::RagResult& result, size_t index) const;
    // Streaming: the text and tokens choice `index` produced so far, then its object at its end.
    void token(size_t index, const engine::RequestEvent& e);
    nlohmann::json streamed_end(size_t index, const engine::RequestEvent& end, const engine::RequestStats& stats) const;

private:
    const tokenizer::Tokenizer& tokenizer_;
    std::string model_;
    std::unique_ptr<NativeRenderer> native_;   // made by prepared()
    std::vector<engine::RagResult> streamed_;  // per choice: text and tokens so far
};

}  // namespace lazyattn::server
