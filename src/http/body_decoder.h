// Content-Encoding of a request body: identity, gzip (x-gzip) and deflate are decoded with zlib,
// streaming, and stop as soon as the decoded size passes the limit, so a small compressed body
// that would inflate to gigabytes costs at most the limit.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lazyattn::http {

enum class DecodeResult { kOk, kTooLarge, kCorrupt, kUnsupported };

// Decodes `body` in place according to the Content-Encoding header value `encoding`
// (case-insensitive; "" or "identity" leaves it as is). At most `max_bytes` decoded bytes.
DecodeResult decode_content(std::string_view encoding, std::string& body, int64_t max_bytes);

}  // namespace lazyattn::http
