// Splits text at the special tokens it spells, before any pre-tokenization, as llama.cpp's
// tokenizer_st_partition does: special tokens are taken longest first, and each one splits every
// remaining text fragment at all its occurrences, left to right. With parse_special == false only
// user-defined tokens are matched (control and unknown tokens stay plain text), following Hugging
// Face's "added tokens" behaviour.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace lazyattn::tokenizer {

class Vocab;

// Either a token found in the text or a range of the text still to be tokenized.
struct TextFragment {
    TokenId token = -1;  // >= 0 for a special token
    size_t offset = 0;   // text range, when token < 0
    size_t length = 0;

    bool is_token() const { return token >= 0; }
};

// Fragments in text order; text fragments are never empty. Empty text gives no fragments.
std::vector<TextFragment> partition_special_tokens(std::string_view text, const Vocab& vocab, bool parse_special);

}  // namespace lazyattn::tokenizer
