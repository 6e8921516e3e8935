#include "bench/qa_dataset.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/request/rag_prompt.h"

namespace lazyattn::bench {

Expected<std::vector<QaItem>> read_qa_file(const std::string& path, int limit) {
    std::ifstream in(path);
    if (!in) return not_found("cannot read '" + path + "'");
    std::vector<QaItem> out;
    std::string line;
    for (int line_no = 1; (limit <= 0 || int(out.size()) < limit) && std::getline(in, line); ++line_no) {
        if (line.empty()) continue;
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains("question") || !j.contains("documents")) {
            return invalid_argument("'" + path + "': line " + std::to_string(line_no) + " is not a QA record");
        }
        QaItem q;
        q.question = j["question"].get<std::string>();
        for (const auto& a : j.value("answers", nlohmann::json::array())) q.answers.push_back(a.get<std::string>());
        for (const auto& d : j["documents"]) {
            q.passages.push_back({d.value("title", ""), d.value("text", "")});
            q.documents.push_back(engine::format_document(q.passages.back().title, q.passages.back().text));
        }
        out.push_back(std::move(q));
    }
    return out;
}

}  // namespace lazyattn::bench
