// llama-server's native /completion response: one JSON object per prompt ({content, tokens,
// stop, stop_type, stopping_word, timings, generation_settings, completion_probabilities, ...}),
// or, streamed, `data: {...}` events carrying each piece's content and tokens with stop false,
// then one with stop true and every field but the content (no [DONE], as llama-server).
//
// Counts come from engine::RequestStats: tokens_evaluated is the prompt, tokens_cached (and
// timings.cache_n) what the KV cache served, timings.prompt_n what was computed; prompt_ms is
// the time from admission to the first token, predicted_ms the decode time. stop_type: "limit"
// for FinishReason::kLength, "word" when a stop string ended it (RagResult::stop_word), else
// "eos".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/request/finish_reason.h"
#include "server/api_renderer.h"
#include "server/llama_telemetry.h"
#include "server/native_request.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::server {

// What the renderer reports beside the results.
struct NativeContext {
    std::string model;
    int32_t n_ctx = 0;  // the context one request may fill (for `truncated`)
    int32_t id_slot = 0;
    int32_t index = 0;  // the prompt's place in a list
    // Set by prepared() from the request as the front laid it out (tests may set them).
    std::string prompt;  // the prompt evaluated, special tokens shown
    nlohmann::json generation_settings;
};

// llama-server's generation_settings (and /props' params) for a checked request. `n_predict`: the
// limit it runs with (-1: none but the context).
nlohmann::json native_generation_settings(const GenerationRequest& gen, const NativeOptions& o,
                                          const tokenizer::Tokenizer& tokenizer, int32_t n_predict, int32_t n_ctx);

// completion_probabilities entries for tokens ids[from..) with their logprobs: {logprob,
// top_logprobs}, or with post_sampling (the logprobs are the sampling chain's) {prob, top_probs}.
nlohmann::json native_probabilities(const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                                    const std::vector<float>& logprobs, const std::vector<engine::TopLogprobs>& top,
                                    size_t from = 0, bool post_sampling = false);

// llama-server's stop_type for a finished request.
std::string native_stop_type(engine::FinishReason reason, const std::string& stop_word);

// `timings` from one request's stats.
nlohmann::json native_timings(const engine::RequestStats& stats);

// An error found by a check shared with the OpenAI API, naming the native field instead.
ApiError native_field_names(ApiError e);

// Keeps the fields `response_fields` names ("a/b" takes b out of a, named "a/b"); all when empty.
nlohmann::json select_response_fields(const nlohmann::json& body, const std::vector<std::string>& fields);

class NativeRenderer : public ApiRenderer {
public:
    NativeRenderer(const tokenizer::Tokenizer& tokenizer, NativeOptions options, NativeContext context);

    // The result as one object.
    nlohmann::json result_json(const engine::RagResult& result) const;
    // The object whole_body() wrote last (the route joins a list's results into an array).
    nlohmann::json take_last_result() { return std::move(last_result_); }

    void prepared(const PreparedRequest& request) override;
    std::string whole_body(const std::vector<ChoiceResult>& choices, const engine::RequestStats& usage) override;
    void stream_open(size_t choice, const engine::RequestHandle& handle, std::string& out) override;
    void stream_token(size_t choice, const engine::RequestEvent& e, std::string& out) override;
    // return_progress: a chunk with no content carrying prompt_progress (and timings).
    void stream_progress(size_t choice, const engine::RequestEvent& e, std::string& out) override;
    void stream_end(size_t choice, const engine::RequestEvent& e, const engine::RequestStats& stats,
                    std::string& out) override;
    void stream_close(const engine::RequestStats& usage, std::string& out) override;
    // Errors name the native fields (n_predict, n_probs), whichever check found them.
    std::string error_body(const ApiError& e) const override;

private:
    // The fields of the last result, whole or streamed (content and tokens given by the caller).
    nlohmann::json final_fields(engine::FinishReason reason, const std::string& stop_word,
                                const engine::RequestStats& stats, bool has_new_line) const;

    const tokenizer::Tokenizer& tokenizer_;
    const NativeOptions options_;
    NativeContext context_;
    nlohmann::json last_result_;
    // Streaming: tokens whose text is still held back (a partial character, a possible stop
    // string) go out with the next piece of text.
    std::vector<int32_t> pending_ids_;
    std::vector<float> pending_logprobs_;
    std::vector<engine::TopLogprobs> pending_top_;
    bool has_new_line_ = false;
    bool timings_per_token_ = false;  // every chunk carries `timings` (the request's timings_per_token)
    StreamTimings timings_;           // the latest event's
};

}  // namespace lazyattn::server
