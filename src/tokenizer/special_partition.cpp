#include "tokenizer/special_partition.h"

#include <cctype>

#include "tokenizer/vocab.h"

namespace lazyattn::tokenizer {
namespace {

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// Splits one text fragment at every occurrence of `token`, appending the pieces to `out`.
void split_fragment(std::string_view text, const TextFragment& fragment, TokenId token, std::string_view token_text,
                    uint32_t attr, std::vector<TextFragment>& out) {
    size_t base = fragment.offset;
    size_t length = fragment.length;
    while (length > 0) {
        const size_t match = text.substr(0, base + length).find(token_text, base);
        if (match == std::string_view::npos) {
            out.push_back({-1, base, length});
            return;
        }
        size_t left_length = match - base;
        if (attr & kAttrLstrip) {
            while (left_length > 0 && is_space(text[base + left_length - 1])) --left_length;
        }
        if (left_length > 0) out.push_back({-1, base, left_length});
        out.push_back({token, 0, 0});

        size_t right = match + token_text.size();
        size_t right_length = base + length - right;
        if (attr & kAttrRstrip) {
            while (right_length > 0 && is_space(text[right])) {
                ++right;
                --right_length;
            }
        }
        base = right;
        length = right_length;
    }
}

}  // namespace

std::vector<TextFragment> partition_special_tokens(std::string_view text, const Vocab& vocab, bool parse_special) {
    std::vector<TextFragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({-1, 0, text.size()});

    std::vector<TextFragment> next;
    for (const TokenId id : vocab.special_tokens()) {
        const uint32_t attr = vocab.attr(id);
        if (!parse_special && (attr & (kAttrControl | kAttrUnknown))) continue;
        const std::string& token_text = vocab.text(id);
        if (text.find(token_text) == std::string_view::npos) continue;

        next.clear();
        for (const TextFragment& f : fragments) {
            if (f.is_token()) {
                next.push_back(f);
            } else {
                split_fragment(text, f, id, token_text, attr, next);
            }
        }
        fragments.swap(next);
    }
    return fragments;
}

}  // namespace lazyattn::tokenizer
