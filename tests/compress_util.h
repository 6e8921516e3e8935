// Test support: compress bytes with zlib as an HTTP client would before sending them with
// Content-Encoding (gzip: window_bits 15 + 16; deflate: 15).
#pragma once

#include <zlib.h>

#include <string>

namespace lazyattn::testing {

inline std::string compress_with(const std::string& in, int window_bits, int level = 9) {
    z_stream zs{};
    deflateInit2(&zs, level, Z_DEFLATED, window_bits, 9, Z_DEFAULT_STRATEGY);
    std::string out(deflateBound(&zs, uLong(in.size())) + 64, '\0');
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs.avail_in = uInt(in.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = uInt(out.size());
    deflate(&zs, Z_FINISH);
    out.resize(zs.total_out);
    deflateEnd(&zs);
    return out;
}

inline std::string gzip(const std::string& in) { return compress_with(in, 15 + 16); }

}  // namespace lazyattn::testing
