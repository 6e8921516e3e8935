// UTF-8 helpers (the tokenizer, the server and the synthetic vocabulary use them), in two flavours on purpose:
//  - strict (decode_utf8_one, is_valid_utf8, sanitize_utf8, utf8_incomplete_tail): Unicode's rules
//    (no overlong forms, no surrogates, nothing above U+10FFFF), one U+FFFD per maximal invalid
//    subpart. Used for text that leaves lazyattn (streamed output), which must always be valid.
//  - lenient (decode_utf8_lenient, append_utf8): the exact behaviour of llama.cpp's
//    unicode_cpts_from_utf8 / unicode_cpt_to_utf8, which accept overlong forms and surrogates and
//    turn each undecodable byte into U+FFFD. Tokenization must go through these so that token ids
//    match llama.cpp even on malformed input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lazyattn::text {

inline constexpr char32_t kReplacementChar = 0xFFFD;
inline constexpr char32_t kMaxCodePoint = 0x10FFFF;

enum class Utf8Status { kOk, kInvalid, kIncomplete };

struct Utf8Decoded {
    Utf8Status status = Utf8Status::kOk;
    char32_t code_point = 0;  // kReplacementChar unless status is kOk
    size_t length = 0;        // bytes consumed (>= 1 when pos < size): the sequence, the maximal
                              // invalid subpart, or the incomplete prefix up to the end
};

// Strict decoding of the sequence starting at `pos` (< s.size()). kIncomplete means the bytes up to
// the end of `s` are a proper prefix of a valid sequence (more bytes could complete it).
Utf8Decoded decode_utf8_one(std::string_view s, size_t pos);

bool is_valid_utf8(std::string_view s);

// Number of trailing bytes (0..3) of `s` that form a proper prefix of a valid sequence.
size_t utf8_incomplete_tail(std::string_view s);

// Someone else's string quoted in a message (an error, a log line): at most its first
// `max_bytes` bytes, cut at a character boundary and made valid, then "... (N bytes)", so that a
// megabyte of input never becomes a megabyte of error or log.
std::string clip_for_message(std::string_view s, size_t max_bytes = 64);

// Copy of `s` with every invalid or incomplete subpart replaced by one U+FFFD.
std::string sanitize_utf8(std::string_view s);

// Appends the UTF-8 form of `cp` as llama.cpp writes it: surrogates are encoded like any other
// three-byte code point; values above U+10FFFF become U+FFFD.
void append_utf8(std::string& out, char32_t cp);
std::string encode_utf8(char32_t cp);

// llama.cpp's decoding: a lead byte followed by enough continuation bytes is decoded without
// checking for overlong forms or surrogates; any other byte becomes one U+FFFD and decoding resumes
// at the next byte. Four-byte forms above U+10FFFF (which llama.cpp cannot re-encode) give U+FFFD.
std::vector<char32_t> decode_utf8_lenient(std::string_view s);

// Length of a sequence from its lead byte by llama.cpp's table (high nibble 0-11 -> 1, 12-13 -> 2,
// 14 -> 3, 15 -> 4). Used to cut byte-mapped words into BPE symbols.
size_t utf8_lead_length(uint8_t lead);

}  // namespace lazyattn::text
