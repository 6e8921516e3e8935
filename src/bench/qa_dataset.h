// The question-answering files lazyattn demos and evaluates on (data/2wiki_sample.jsonl): one
// JSON object per line with a question, its gold answers and its retrieved passages.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace lazyattn::bench {

struct Passage {
    std::string title, text;
};

struct QaItem {
    std::string question;
    std::vector<std::string> answers;
    std::vector<std::string> documents;  // formatted with engine::format_document
    std::vector<Passage> passages;       // the same, unformatted
};

// Reads at most `limit` records (all when limit <= 0); a malformed line is an error naming it.
Expected<std::vector<QaItem>> read_qa_file(const std::string& path, int limit = 0);

}  // namespace lazyattn::bench
