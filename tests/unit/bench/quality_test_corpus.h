// What the quality-task tests share: the 2Wiki sample the generators take their filler from, and
// a word count as the generators count document lengths.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench/qa_dataset.h"

namespace lazyattn::bench::testing_support {

inline std::vector<QaItem> sample_corpus() {
    auto items = read_qa_file(std::string(LAZYATTN_SOURCE_DIR) + "/data/2wiki_sample.jsonl");
    EXPECT_TRUE(items.ok()) << items.status().to_string();
    return items.ok() ? *items : std::vector<QaItem>{};
}

// Words separated by spaces or newlines.
inline int32_t words(const std::string& s) {
    int32_t n = 0;
    bool in = false;
    for (char c : s) {
        const bool space = c == ' ' || c == '\n';
        n += !space && !in;
        in = !space;
    }
    return n;
}

}  // namespace lazyattn::bench::testing_support
