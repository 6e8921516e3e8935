#include "cli/corpus.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <nlohmann/json.hpp>

namespace lazyattn::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status add_json_line(const nlohmann::json& j, std::vector<CorpusDocument>* out) {
    auto add = [out](const nlohmann::json& d) -> Status {
        if (!d.is_object() || !d.contains("text") || !d["text"].is_string()) {
            return invalid_argument("a document needs a \"text\" string");
        }
        const std::string title = d.contains("title") && d["title"].is_string() ? d["title"].get<std::string>() : "";
        out->push_back({title, d["text"].get<std::string>()});
        return {};
    };
    if (j.is_object() && j.contains("documents")) {
        if (!j["documents"].is_array()) return invalid_argument("\"documents\" must be an array");
        for (const auto& d : j["documents"]) LA_RETURN_IF_ERROR(add(d));
        return {};
    }
    return add(j);
}

}  // namespace

Expected<std::vector<CorpusDocument>> read_corpus_documents(const std::string& path, const CorpusReadLimits& limits) {
    std::error_code ec;
    if (limits.regular_files_only && !std::filesystem::is_regular_file(path, ec)) {
        return invalid_argument("'" + path + "' is not a regular file (a corpus is read whole at start-up)");
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return not_found("cannot open corpus '" + path + "'");
    std::vector<CorpusDocument> docs;
    if (!ends_with(path, ".jsonl") && !ends_with(path, ".json")) {
        std::string text;
        if (limits.max_plain_bytes == 0) {
            std::stringstream ss;
            ss << in.rdbuf();
            text = std::move(ss).str();
        } else {
            text.resize(limits.max_plain_bytes + 1);  // one byte more tells a longer file
            in.read(text.data(), std::streamsize(text.size()));
            text.resize(size_t(in.gcount()));
            if (text.size() > limits.max_plain_bytes) return docs;  // too long to be a document here
        }
        if (!text.empty()) docs.push_back({"", std::move(text)});
        return docs;
    }
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const auto j = nlohmann::json::parse(line, nullptr, false);
        Status st = j.is_discarded() ? invalid_argument("not JSON") : add_json_line(j, &docs);
        if (!st.ok()) return invalid_argument(path + ":" + std::to_string(n) + ": " + st.message());
    }
    return docs;
}

Expected<std::vector<CorpusDocument>> read_corpus_files(const std::vector<std::string>& paths) {
    std::vector<CorpusDocument> all;
    for (const std::string& p : paths) {
        LA_ASSIGN_OR_RETURN(auto docs, read_corpus_documents(p));
        all.insert(all.end(), std::make_move_iterator(docs.begin()), std::make_move_iterator(docs.end()));
    }
    return all;
}

}  // namespace lazyattn::cli
