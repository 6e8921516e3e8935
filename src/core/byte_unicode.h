// GPT-2's bytes_to_unicode mapping: byte-level BPE vocabularies spell every byte as a printable
// code point so that tokens are valid text. Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ')
// map to themselves; the other 68 bytes map, in byte order, to U+0100, U+0101, ... (so ' ' is 'Ġ'
// U+0120 and '\n' is 'Ċ' U+010A).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lazyattn::text {

// UTF-8 of the code point that stands for `byte`.
const std::string& byte_to_unicode(uint8_t byte);

// The byte a code point stands for, or -1 if it is not one of the 256 mapped code points.
int unicode_to_byte(char32_t cp);

// Maps every byte of `bytes` and concatenates the results.
std::string bytes_to_unicode(std::string_view bytes);

}  // namespace lazyattn::text
