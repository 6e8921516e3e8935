// llama-server's native /completion body -> GenerationRequests. Its fields that mean what an
// OpenAI field means are renamed and checked by the OpenAI parser (parse_generation_request), so
// both APIs refuse the same values the same way; errors then name the native field again
// (n_probs, repeat_penalty, ...). What is native only is read here: the prompt shapes (a string,
// token ids, strings and ids mixed, {"prompt_string"}, or a list of those: one result each),
// logit_bias as [[id or text, bias]] or {"id or text": bias}, n_probs, return_tokens, id_slot,
// samplers, response_fields.
//
// Fields llama-server honours that change the output and lazyattn cannot honour (mirostat,
// grammar, json_schema, DRY, XTC, typical_p, dynamic temperature, n_indent, LoRA, media) are a
// 400 naming the field unless they hold their no-op value; fields that do not change the output
// (cache_prompt, backend_sampling, n_keep, ...) are accepted. post_sampling_probs reports the
// probabilities after the sampler chain; timings_per_token, return_progress and verbose are read
// by the OpenAI parser (llama-server's telemetry, GenerationRequest).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "tokenizer/tokenizer.h"

namespace lazyattn::server {

// The most prompts one request may carry (each is a generation of its own, answered in turn).
inline constexpr int32_t kMaxNativePrompts = 16;
// The most names `samplers` and `response_fields` may hold.
inline constexpr int32_t kMaxNativeNames = 64;

// One prompt of the list: its text, or its token ids (strings and ids mixed are tokenized here).
struct NativePrompt {
    std::string text;
    std::vector<int32_t> tokens;
};

// What the native response shows beyond the generation itself.
struct NativeOptions {
    bool return_tokens = false;
    int32_t n_probs = 0;  // completion_probabilities with this many alternatives (0: none)
    // completion_probabilities are probabilities after the sampler chain (prob, top_probs).
    bool post_sampling_probs = false;
    int32_t id_slot = -1;  // as asked (-1: any)
    bool stream = false;
    // n_predict as asked (-1: until a stop or the context's end).
    int32_t n_predict = -1;
    std::vector<std::string> samplers;         // as given (validated, not applied: the order is fixed)
    std::vector<std::string> response_fields;  // empty: every field
};

struct NativeRequest {
    // Every field but the prompt, checked; each prompt is answered with a copy of it.
    GenerationRequest base;
    std::vector<NativePrompt> prompts;
    bool prompt_list = false;  // the prompt was a list of prompts: the answer is a JSON array
    NativeOptions options;

    // base with prompt i in place.
    GenerationRequest request_for(size_t i) const;
};

// `num_slots`: the requests the engine runs at once (id_slot must be below it).
std::optional<ApiError> parse_native_request(const nlohmann::json& body, const tokenizer::Tokenizer& tokenizer,
                                             int32_t num_slots, NativeRequest& out);

// The names `samplers` accepts (llama-server's sampler names and their one-letter forms).
bool is_native_sampler_name(const std::string& name);

}  // namespace lazyattn::server
