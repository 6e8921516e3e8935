// OpenAI's logprobs objects from the engine's per-token logprobs. Chat: {"content": [{"token",
// "logprob", "bytes", "top_logprobs": [{"token", "logprob", "bytes"}]}], "refusal": null}.
// Completions: {"tokens", "token_logprobs", "top_logprobs" (token text -> logprob maps),
// "text_offset"}, where an echoed prompt's tokens come first (a logprob nothing conditions on,
// the first prompt token's, is null). Token text is the token's bytes as the tokenizer renders
// them (special tokens included); offsets are byte offsets into the returned text.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/request/request_handle.h"
#include "engine/request/token_logprobs.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::server {

// Tokens with their logprobs (NaN: none) and alternatives, in order.
struct TokenLogprobList {
    std::vector<int32_t> ids;
    std::vector<float> logprobs;
    std::vector<engine::TopLogprobs> top;

    void append(int32_t id, float logprob, engine::TopLogprobs alternatives);
    bool empty() const { return ids.empty(); }
    void clear();
};

// Appends the prompt tokens `tokens` (a request's tail) with the logprobs the engine published
// for them (NaN where there are none).
void append_prompt_logprobs(const engine::RequestHandle& handle, const std::vector<int32_t>& tokens,
                            TokenLogprobList& out);

nlohmann::json chat_logprobs_json(const tokenizer::Tokenizer& tokenizer, const TokenLogprobList& tokens);
// `first_offset`: the byte offset of the first token in the response's text.
nlohmann::json completion_logprobs_json(const tokenizer::Tokenizer& tokenizer, const TokenLogprobList& tokens,
                                        int64_t first_offset);

}  // namespace lazyattn::server
