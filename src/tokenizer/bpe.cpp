// The merge loop keeps symbols in a linked list over the word and candidate pairs in a priority
// queue. A queued pair is stale once either side has grown or been absorbed; comparing the lengths
// recorded at push time detects that (llama.cpp compares the texts, which is equivalent).
#include "tokenizer/bpe.h"

#include <algorithm>
#include <queue>

#include "core/utf8.h"

namespace lazyattn::tokenizer {

using namespace text;  // core/utf8.h, core/byte_unicode.h
namespace {

// A pair's key is the left symbol's length, then both texts: unambiguous even when symbols hold
// raw newlines (SentencePiece-style vocabularies such as Gemma 4's are not byte-mapped).
std::string pair_key(std::string_view left, std::string_view right) {
    std::string key;
    key.reserve(sizeof(uint32_t) + left.size() + right.size());
    const auto length = static_cast<uint32_t>(left.size());
    key.append(reinterpret_cast<const char*>(&length), sizeof(length));
    key.append(left);
    key.append(right);
    return key;
}

struct Symbol {
    size_t start;
    size_t length;  // 0 once merged into its left neighbour
    int prev;
    int next;
};

struct Bigram {
    int rank;
    int left;
    int right;
    size_t left_length;
    size_t right_length;
};

// Lowest rank first; among equal ranks the leftmost pair.
struct BigramAfter {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

std::vector<Symbol> split_characters(std::string_view word) {
    std::vector<Symbol> symbols;
    for (size_t offset = 0; offset < word.size();) {
        const size_t length = std::min(word.size() - offset, utf8_lead_length(static_cast<uint8_t>(word[offset])));
        const int index = static_cast<int>(symbols.size());
        symbols.push_back({offset, length, index - 1, -1});
        offset += length;
        if (offset < word.size()) symbols.back().next = index + 1;
    }
    return symbols;
}

}  // namespace

BpeMerges BpeMerges::build(const std::vector<std::string>& merges) {
    BpeMerges table;
    table.ranks_.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
        const std::string& line = merges[i];
        const size_t space = line.find(' ', 1);
        const std::string_view text(line);
        std::string key =
            space != std::string::npos ? pair_key(text.substr(0, space), text.substr(space + 1)) : pair_key({}, {});
        table.ranks_.emplace(std::move(key), static_cast<int>(i));
    }
    return table;
}

int BpeMerges::rank(std::string_view left, std::string_view right) const {
    const auto it = ranks_.find(std::string_view(pair_key(left, right)));
    return it == ranks_.end() ? -1 : it->second;
}

std::vector<std::string_view> BpeMerges::merge(std::string_view word) const {
    std::vector<Symbol> symbols = split_characters(word);
    auto text = [&](int i) { return word.substr(symbols[i].start, symbols[i].length); };

    std::priority_queue<Bigram, std::vector<Bigram>, BigramAfter> queue;
    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const int r = rank(text(left), text(right));
        if (r < 0) return;
        queue.push({r, left, right, symbols[left].length, symbols[right].length});
    };
    for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& left = symbols[b.left];
        Symbol& right = symbols[b.right];
        if (left.length == 0 || right.length == 0 || left.length != b.left_length || right.length != b.right_length) {
            continue;
        }
        left.length += right.length;
        right.length = 0;
        left.next = right.next;
        if (right.next >= 0) symbols[right.next].prev = b.left;
        try_add(left.prev, b.left);
        try_add(b.left, left.next);
    }

    std::vector<std::string_view> out;
    for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) out.push_back(text(i));
    return out;
}

}  // namespace lazyattn::tokenizer
