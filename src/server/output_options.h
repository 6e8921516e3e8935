// OutputOptions: how a completion's tokens are rendered, beyond their text: logprobs, the echoed
// prompt (completions), the usage chunk (streams).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lazyattn::server {

struct OutputOptions {
    bool logprobs = false;             // per-token logprobs objects (the request's logprobs >= 0)
    bool echo = false;                 // completions: the prompt comes back before the completion
    std::string echo_text;             // ... as this text
    std::vector<int32_t> echo_tokens;  // ... and these tokens (the tail), whose logprobs come back
    bool include_usage = false;        // streams: stream_options.include_usage
};

}  // namespace lazyattn::server
