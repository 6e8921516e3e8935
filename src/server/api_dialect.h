// ApiDialect: which API a server follows where OpenAI's and llama-server's answer the same
// request differently. One setting (`lazyattn serve --api-dialect openai|llama-server`), read
// wherever the two disagree:
//   - GET /metrics: OpenAI-side servers (vLLM) serve it by default; llama-server only with --metrics.
//   - a Responses answer stopped by max_output_tokens: OpenAI's is status "incomplete" (stream:
//     response.incomplete, incomplete_details.reason "max_output_tokens"); llama-server's is
//     "completed" (stream: response.completed), which its clients wait for.
// Not given, it follows the command line's shape: one asking for llama-server's slots
// (`--parallel N`, `-np N`) was written for llama-server and gets llama-server's answers; any
// other gets OpenAI's, which OpenAI's clients expect.
#pragma once

#include <string>

namespace lazyattn::server {

enum class ApiDialect { kOpenAI, kLlamaServer };

// The names --api-dialect takes.
inline constexpr const char* kApiDialectOpenAI = "openai";
inline constexpr const char* kApiDialectLlamaServer = "llama-server";

// `flag`: --api-dialect as given ("" when not); `llama_server_shape`: the command line asks for
// llama-server's slots.
inline ApiDialect api_dialect(const std::string& flag, bool llama_server_shape) {
    if (flag == kApiDialectLlamaServer) return ApiDialect::kLlamaServer;
    if (flag == kApiDialectOpenAI) return ApiDialect::kOpenAI;
    return llama_server_shape ? ApiDialect::kLlamaServer : ApiDialect::kOpenAI;
}

inline const char* api_dialect_name(ApiDialect d) {
    return d == ApiDialect::kLlamaServer ? kApiDialectLlamaServer : kApiDialectOpenAI;
}

}  // namespace lazyattn::server
