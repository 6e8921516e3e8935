#include "core/byte_unicode.h"

#include <array>

#include "core/utf8.h"

namespace lazyattn::text {
namespace {

bool maps_to_itself(int byte) {
    return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}

struct ByteTables {
    std::array<std::string, 256> byte_to_text;
    std::array<char32_t, 256> byte_to_cp{};
    std::array<int16_t, 256 + 68> cp_to_byte{};  // mapped code points are all below 256 + 68

    ByteTables() {
        cp_to_byte.fill(-1);
        int next_extra = 0;
        for (int b = 0; b < 256; ++b) {
            const char32_t cp = maps_to_itself(b) ? static_cast<char32_t>(b) : 256 + next_extra++;
            byte_to_cp[b] = cp;
            byte_to_text[b] = encode_utf8(cp);
            cp_to_byte[cp] = static_cast<int16_t>(b);
        }
    }
};

const ByteTables& tables() {
    static const ByteTables kTables;
    return kTables;
}

}  // namespace

const std::string& byte_to_unicode(uint8_t byte) { return tables().byte_to_text[byte]; }

int unicode_to_byte(char32_t cp) {
    const auto& t = tables();
    return cp < t.cp_to_byte.size() ? t.cp_to_byte[cp] : -1;
}

std::string bytes_to_unicode(std::string_view bytes) {
    const auto& t = tables();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) out += t.byte_to_text[static_cast<uint8_t>(c)];
    return out;
}

}  // namespace lazyattn::text
