#include "http/body_decoder.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>

namespace lazyattn::http {
namespace {

std::string lower_trimmed(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return out;
}

// window_bits: 15 + 16 for gzip, 15 for a zlib-wrapped deflate stream.
DecodeResult inflate_bounded(std::string& body, int window_bits, int64_t max_bytes) {
    z_stream zs{};
    if (inflateInit2(&zs, window_bits) != Z_OK) return DecodeResult::kCorrupt;
    std::string out;
    zs.next_in = reinterpret_cast<Bytef*>(body.data());
    zs.avail_in = uInt(body.size());
    char chunk[64 << 10];
    int rc = Z_OK;
    DecodeResult result = DecodeResult::kOk;
    while (rc != Z_STREAM_END) {
        zs.next_out = reinterpret_cast<Bytef*>(chunk);
        zs.avail_out = sizeof chunk;
        rc = inflate(&zs, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) {
            result = DecodeResult::kCorrupt;  // includes Z_BUF_ERROR: input ended mid-stream
            break;
        }
        const size_t produced = sizeof chunk - zs.avail_out;
        if (int64_t(out.size() + produced) > max_bytes) {
            result = DecodeResult::kTooLarge;
            break;
        }
        out.append(chunk, produced);
    }
    // Bytes after the end of the compressed stream are not part of any body we accept.
    if (result == DecodeResult::kOk && zs.avail_in != 0) result = DecodeResult::kCorrupt;
    inflateEnd(&zs);
    if (result == DecodeResult::kOk) body = std::move(out);
    return result;
}

}  // namespace

DecodeResult decode_content(std::string_view encoding, std::string& body, int64_t max_bytes) {
    const std::string e = lower_trimmed(encoding);
    if (e.empty() || e == "identity") {
        return int64_t(body.size()) > max_bytes ? DecodeResult::kTooLarge : DecodeResult::kOk;
    }
    if (e == "gzip" || e == "x-gzip") return inflate_bounded(body, 15 + 16, max_bytes);
    if (e == "deflate") return inflate_bounded(body, 15, max_bytes);
    return DecodeResult::kUnsupported;  // br, zstd, or a list of codings
}

}  // namespace lazyattn::http
