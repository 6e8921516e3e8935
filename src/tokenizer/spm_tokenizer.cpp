// The merge loop keeps symbols in a linked list over the fragment and candidate pairs in a
// priority queue, as the BPE merge loop does (bpe.cpp). Neighbouring symbols are adjacent in the
// text, so a pair's text is a view of it and costs nothing to build; pairs longer than the
// longest token are never looked up. Each merge queues at most two new pairs, so a fragment of n
// characters costs O(n log n) whatever it contains.
//
// llama.cpp also records how each merged text was formed, to split a final symbol that is not a
// token back into its parts. A merge only happens when the merged text is a token, and a single
// character can never equal the text of a pair, so that path is never taken; it is left out here.
#include "tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "core/utf8.h"
#include "tokenizer/special_partition.h"

namespace lazyattn::tokenizer {

using namespace text;  // core/utf8.h
namespace {

constexpr std::string_view kSpaceMark = "\xE2\x96\x81";  // U+2581, SentencePiece's space

struct Symbol {
    size_t start;
    size_t length;  // 0 once merged into its left neighbour
    int prev;
    int next;
};

struct Candidate {
    float score;
    int left;
    int right;
    size_t length;  // of both symbols together when queued; differs once either has changed
};

// Highest score first; among equal scores the leftmost pair.
struct CandidateAfter {
    bool operator()(const Candidate& a, const Candidate& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

std::vector<Symbol> split_characters(std::string_view text) {
    std::vector<Symbol> symbols;
    symbols.reserve(text.size());
    for (size_t offset = 0; offset < text.size();) {
        const size_t length = std::min(text.size() - offset, utf8_lead_length(static_cast<uint8_t>(text[offset])));
        const int index = static_cast<int>(symbols.size());
        symbols.push_back({offset, length, index - 1, -1});
        offset += length;
        if (offset < text.size()) symbols.back().next = index + 1;
    }
    return symbols;
}

std::string escape_spaces(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        if (c == ' ') {
            out += kSpaceMark;
        } else {
            out += c;
        }
    }
    return out;
}

std::string unescape_spaces(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0;;) {
        const size_t hit = text.find(kSpaceMark, pos);
        out.append(text.substr(pos, hit - pos));
        if (hit == std::string_view::npos) return out;
        out += ' ';
        pos = hit + kSpaceMark.size();
    }
}

}  // namespace

Expected<std::unique_ptr<SpmTokenizer>> SpmTokenizer::create(const VocabData& data) {
    LA_ASSIGN_OR_RETURN(Vocab vocab, Vocab::build(data, /*default_add_bos=*/true));
    for (TokenId id = 0; id < vocab.size(); ++id) {
        if ((vocab.attr(id) & kAttrByte) && !byte_of_token_text(vocab.text(id))) {
            return corrupt("byte token " + std::to_string(id) + " is spelled '" + vocab.text(id) + "', not <0xXX>");
        }
    }
    std::unique_ptr<SpmTokenizer> tok(new SpmTokenizer(std::move(vocab), data.add_space_prefix.value_or(true)));
    const bool spells_every_byte = std::find(tok->byte_ids_.begin(), tok->byte_ids_.end(), -1) == tok->byte_ids_.end();
    if (!spells_every_byte && tok->vocab_.special().unk < 0) {
        return corrupt(
            "SentencePiece vocabulary has neither a token for every byte (<0x00>..<0xFF>) nor an "
            "unknown token, so some text could not be tokenized");
    }
    return tok;
}

SpmTokenizer::SpmTokenizer(Vocab vocab, bool add_space_prefix)
    : vocab_(std::move(vocab)), add_space_prefix_(add_space_prefix) {
    for (TokenId id = 0; id < vocab_.size(); ++id)
        max_token_bytes_ = std::max(max_token_bytes_, vocab_.text(id).size());
    // As llama.cpp's byte_to_token: the "<0xXX>" token, else a token spelling the byte itself.
    for (int b = 0; b < 256; ++b) {
        char hex[7];
        std::snprintf(hex, sizeof(hex), "<0x%02X>", static_cast<unsigned>(b));
        const char raw = static_cast<char>(b);
        auto id = vocab_.find(hex);
        if (!id) id = vocab_.find(std::string_view(&raw, 1));
        byte_ids_[b] = id.value_or(-1);
    }
    pieces_.reserve(vocab_.size());
    for (TokenId id = 0; id < vocab_.size(); ++id) pieces_.push_back(compute_piece(id));
}

std::string SpmTokenizer::compute_piece(TokenId id) const {
    const uint32_t attr = vocab_.attr(id);
    const std::string& text = vocab_.text(id);
    if (attr & (kAttrUnknown | kAttrControl | kAttrUserDefined)) return text;
    if (attr & kAttrNormal) return unescape_spaces(text);
    if (attr & kAttrByte) return std::string(1, static_cast<char>(*byte_of_token_text(text)));
    return {};  // unused and undefined tokens render as nothing, as in llama.cpp
}

std::vector<TokenId> SpmTokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    std::vector<TokenId> out;
    if (add_special && vocab_.add_bos()) out.push_back(vocab_.special().bos);
    // llama.cpp prefixes a space to the first text fragment and to every one after a special
    // token, with or without BOS.
    bool after_special = true;
    for (const TextFragment& f : partition_special_tokens(text, vocab_, parse_special)) {
        if (f.is_token()) {
            out.push_back(f.token);
            after_special = true;
            continue;
        }
        const std::string_view fragment = text.substr(f.offset, f.length);
        encode_escaped(
            escape_spaces(add_space_prefix_ && after_special ? " " + std::string(fragment) : std::string(fragment)),
            out);
        after_special = false;
    }
    if (add_special && vocab_.add_eos()) out.push_back(vocab_.special().eos);
    return out;
}

void SpmTokenizer::encode_escaped(std::string_view text, std::vector<TokenId>& out) const {
    std::vector<Symbol> symbols = split_characters(text);
    std::priority_queue<Candidate, std::vector<Candidate>, CandidateAfter> queue;
    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const size_t length = symbols[left].length + symbols[right].length;
        if (length > max_token_bytes_) return;
        const auto id = vocab_.find(text.substr(symbols[left].start, length));
        if (!id) return;
        queue.push({vocab_.score(*id), left, right, length});
    };
    for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Symbol& left = symbols[c.left];
        Symbol& right = symbols[c.right];
        if (left.length == 0 || right.length == 0 || left.length + right.length != c.length) continue;
        left.length += right.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = c.left;
        try_add(left.prev, c.left);
        try_add(c.left, left.next);
    }

    for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) {
        emit_symbol(text.substr(symbols[i].start, symbols[i].length), out);
    }
}

void SpmTokenizer::emit_symbol(std::string_view symbol, std::vector<TokenId>& out) const {
    if (const auto id = vocab_.find(symbol)) {
        out.push_back(*id);
        return;
    }
    bool spelled = true;
    for (const char c : symbol) spelled = spelled && byte_ids_[static_cast<uint8_t>(c)] >= 0;
    if (!spelled) {  // create() made sure there is an unknown token then
        out.push_back(vocab_.special().unk);
        return;
    }
    for (const char c : symbol) out.push_back(byte_ids_[static_cast<uint8_t>(c)]);
}

std::string SpmTokenizer::token_to_piece(TokenId id, bool render_special) const {
    if (!vocab_.contains(id)) return {};
    if (!render_special && (vocab_.attr(id) & (kAttrUnknown | kAttrControl))) return {};
    return pieces_[id];
}

}  // namespace lazyattn::tokenizer
