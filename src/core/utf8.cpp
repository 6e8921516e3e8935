// Strict decoding follows Unicode's "maximal subpart" practice (Table 3-7, well-formed byte
// sequences): the second byte's range depends on the lead byte, which is what rules out overlong
// forms, surrogates and code points above U+10FFFF.
#include "core/utf8.h"

namespace lazyattn::text {
namespace {

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// Sequence length and the allowed range of the second byte for a strict lead byte; length 0 for a
// byte that can never start a sequence.
struct LeadInfo {
    size_t length;
    uint8_t second_lo;
    uint8_t second_hi;
};

LeadInfo strict_lead_info(uint8_t b) {
    if (b < 0x80) return {1, 0, 0};
    if (b >= 0xC2 && b <= 0xDF) return {2, 0x80, 0xBF};
    if (b == 0xE0) return {3, 0xA0, 0xBF};
    if (b == 0xED) return {3, 0x80, 0x9F};
    if (b >= 0xE1 && b <= 0xEF) return {3, 0x80, 0xBF};
    if (b == 0xF0) return {4, 0x90, 0xBF};
    if (b >= 0xF1 && b <= 0xF3) return {4, 0x80, 0xBF};
    if (b == 0xF4) return {4, 0x80, 0x8F};
    return {0, 0, 0};
}

}  // namespace

Utf8Decoded decode_utf8_one(std::string_view s, size_t pos) {
    const auto lead = static_cast<uint8_t>(s[pos]);
    const LeadInfo info = strict_lead_info(lead);
    if (info.length == 1) return {Utf8Status::kOk, lead, 1};
    if (info.length == 0) return {Utf8Status::kInvalid, kReplacementChar, 1};

    char32_t cp = lead & (0xFF >> (info.length + 1));
    for (size_t i = 1; i < info.length; ++i) {
        if (pos + i >= s.size()) return {Utf8Status::kIncomplete, kReplacementChar, i};
        const auto b = static_cast<uint8_t>(s[pos + i]);
        const uint8_t lo = i == 1 ? info.second_lo : 0x80;
        const uint8_t hi = i == 1 ? info.second_hi : 0xBF;
        if (b < lo || b > hi) return {Utf8Status::kInvalid, kReplacementChar, i};
        cp = (cp << 6) | (b & 0x3F);
    }
    return {Utf8Status::kOk, cp, info.length};
}

bool is_valid_utf8(std::string_view s) {
    for (size_t pos = 0; pos < s.size();) {
        const Utf8Decoded d = decode_utf8_one(s, pos);
        if (d.status != Utf8Status::kOk) return false;
        pos += d.length;
    }
    return true;
}

size_t utf8_incomplete_tail(std::string_view s) {
    const size_t max_back = s.size() < 3 ? s.size() : 3;
    for (size_t k = 1; k <= max_back; ++k) {
        const size_t pos = s.size() - k;
        if (is_continuation(static_cast<uint8_t>(s[pos]))) continue;
        const Utf8Decoded d = decode_utf8_one(s, pos);
        return d.status == Utf8Status::kIncomplete && d.length == k ? k : 0;
    }
    return 0;
}

std::string clip_for_message(std::string_view s, size_t max_bytes) {
    if (s.size() <= max_bytes) return sanitize_utf8(s);
    size_t end = max_bytes;
    while (end > 0 && is_continuation(uint8_t(s[end]))) --end;
    return sanitize_utf8(s.substr(0, end)) + "... (" + std::to_string(s.size()) + " bytes)";
}

std::string sanitize_utf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t pos = 0; pos < s.size();) {
        const Utf8Decoded d = decode_utf8_one(s, pos);
        if (d.status == Utf8Status::kOk) {
            out.append(s.substr(pos, d.length));
        } else {
            append_utf8(out, kReplacementChar);
        }
        pos += d.length;
    }
    return out;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp > kMaxCodePoint) cp = kReplacementChar;
    if (cp <= 0x7F) {
        out.push_back(static_cast<char>(cp));
    } else if (cp <= 0x7FF) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp <= 0xFFFF) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

std::string encode_utf8(char32_t cp) {
    std::string out;
    append_utf8(out, cp);
    return out;
}

std::vector<char32_t> decode_utf8_lenient(std::string_view s) {
    std::vector<char32_t> cps;
    cps.reserve(s.size());
    size_t pos = 0;
    while (pos < s.size()) {
        const auto lead = static_cast<uint8_t>(s[pos]);
        size_t length = 0;
        if (lead < 0x80) {
            length = 1;
        } else if ((lead & 0xE0) == 0xC0) {
            length = 2;
        } else if ((lead & 0xF0) == 0xE0) {
            length = 3;
        } else if ((lead & 0xF8) == 0xF0) {
            length = 4;
        }
        bool ok = length > 0 && pos + length <= s.size();
        for (size_t i = 1; ok && i < length; ++i) {
            ok = is_continuation(static_cast<uint8_t>(s[pos + i]));
        }
        if (!ok) {
            cps.push_back(kReplacementChar);
            ++pos;
            continue;
        }
        char32_t cp = length == 1 ? lead : lead & (0xFF >> (length + 1));
        for (size_t i = 1; i < length; ++i) cp = (cp << 6) | (s[pos + i] & 0x3F);
        cps.push_back(cp > kMaxCodePoint ? kReplacementChar : cp);
        pos += length;
    }
    return cps;
}

size_t utf8_lead_length(uint8_t lead) {
    static constexpr size_t kLookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLookup[lead >> 4];
}

}  // namespace lazyattn::text
