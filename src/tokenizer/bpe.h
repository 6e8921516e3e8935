// BpeMerges: the merge table of a byte-level BPE vocabulary (tokenizer.ggml.merges, "left right" in
// rank order) and the merge loop. A word is cut into UTF-8 characters, then the adjacent pair with
// the lowest rank is merged repeatedly (ties: leftmost first) until no pair has a rank, exactly as
// llama.cpp's llm_tokenizer_bpe_session does. Merged symbols need not be tokens themselves; mapping
// symbols to ids is the caller's business.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"

namespace lazyattn::tokenizer {

class BpeMerges {
public:
    // A merge without a space after its first character is kept with an empty pair, as llama.cpp
    // does; the first occurrence of a duplicated pair keeps its rank.
    static BpeMerges build(const std::vector<std::string>& merges);

    // Rank of merging `left` and `right`, or -1.
    int rank(std::string_view left, std::string_view right) const;
    size_t size() const { return ranks_.size(); }

    // The symbols `word` ends as after merging (views into `word`). Thread-safe.
    std::vector<std::string_view> merge(std::string_view word) const;

private:
    struct StringHash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };

    // Keyed by pair_key(left, right) (bpe.cpp).
    std::unordered_map<std::string, int, StringHash, std::equal_to<>> ranks_;
};

}  // namespace lazyattn::tokenizer
