// `lazyattn bench quality`: answer quality on the 2WikiMultihopQA sample per cache mode. Each
// question is asked with its retrieved passages as documents (greedy decoding); scores are
// substring exact match and token F1 after SQuAD-style normalisation. lazy, lazy-k and
// block-attn compute the same function, so their answers should agree; `none` is full attention
// (documents see each other), which SmolLM2 was trained for and block-diagonal encoding is not.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/qa_dataset.h"
#include "cli/commands.h"
#include "cli/model_path.h"
#include "core/progress.h"
#include "engine/engine.h"
#include "engine/loaded_model.h"
#include "engine/rag_prompt.h"

namespace lazyattn::cli {
namespace {

// Lower case, punctuation and articles removed, whitespace collapsed (SQuAD's normalisation).
std::vector<std::string> normalized_words(const std::string& text) {
    std::string clean;
    for (unsigned char c : text) clean += std::ispunct(c) ? ' ' : char(std::tolower(c));
    std::istringstream in(clean);
    std::vector<std::string> words;
    for (std::string w; in >> w;) {
        if (w != "a" && w != "an" && w != "the") words.push_back(w);
    }
    return words;
}

std::string join(const std::vector<std::string>& w) {
    std::string s;
    for (const auto& x : w) s += (s.empty() ? "" : " ") + x;
    return s;
}

double token_f1(const std::string& prediction, const std::string& answer) {
    const auto p = normalized_words(prediction), a = normalized_words(answer);
    std::map<std::string, int> counts;
    for (const auto& w : a) ++counts[w];
    int common = 0;
    for (const auto& w : p) {
        if (counts[w]-- > 0) ++common;
    }
    if (common == 0) return 0.0;
    const double precision = double(common) / p.size(), recall = double(common) / a.size();
    return 2 * precision * recall / (precision + recall);
}

bool substring_match(const std::string& prediction, const std::string& answer) {
    const std::string p = " " + join(normalized_words(prediction)) + " ",
                      a = " " + join(normalized_words(answer)) + " ";
    return a.size() > 2 && p.find(a) != std::string::npos;
}

}  // namespace

int run_bench_quality(const BenchQualityOptions& o) {
    const std::string path = o.common.model_path.empty() ? default_model_path() : o.common.model_path;
    model::WeightOptions wo;
    wo.dequantize_all = o.fp32;
    auto lm = engine::load_model(path, o.common.num_threads, wo);
    if (!lm.ok()) {
        std::cerr << "error: " << lm.status().to_string() << "\n";
        return 1;
    }
    auto tmpl = tokenizer::chat_template_from_gguf(lm->model->gguf());
    std::optional<tokenizer::ChatTemplate> chat;
    if (tmpl.ok()) chat = *tmpl;
    auto read = bench::read_qa_file(o.data_path);
    if (!read.ok() || read->empty()) {
        std::cerr << "error: " << (read.ok() ? "no questions in " + o.data_path : read.status().to_string()) << "\n";
        return 1;
    }
    const std::vector<bench::QaItem>& items = *read;
    nlohmann::json out;
    std::map<std::string, std::vector<std::string>> answers;
    std::printf("%-11s %8s %8s %10s\n", "mode", "EM", "F1", "questions");
    for (const auto& mode : o.modes) {
        engine::EngineConfig ec;
        ec.kv_dtype = o.common.kv_dtype;
        ec.cache_mode = *engine::parse_cache_mode(mode);
        ec.check_integrity = false;
        engine::Engine eng(*lm->model, *lm->tokenizer, ec);
        double em = 0, f1 = 0;
        ProgressBar bar(mode, int64_t(items.size()));
        for (size_t i = 0; i < items.size(); ++i) {
            const auto& item = items[i];
            engine::RagPromptText text{"Answer the question using the documents. Reply with a short answer only.",
                                       item.documents, item.question};
            auto req = engine::build_rag_request(*lm->tokenizer, chat, text);
            req->max_tokens = 32;
            auto r = eng.run(*req);
            if (!r.ok()) {
                std::cerr << "error: " << r.status().to_string() << "\n";
                return 1;
            }
            double best_f1 = 0;
            bool hit = false;
            for (const auto& a : item.answers) {
                best_f1 = std::max(best_f1, token_f1(r->text, a));
                hit = hit || substring_match(r->text, a);
            }
            em += hit;
            f1 += best_f1;
            answers[mode].push_back(r->text);
            bar.update(int64_t(i + 1));
        }
        bar.finish();
        const double n = double(items.size());
        std::printf("%-11s %7.1f%% %7.1f%% %10zu\n", mode.c_str(), 100 * em / n, 100 * f1 / n, items.size());
        out["modes"].push_back({{"mode", mode}, {"exact_match", em / n}, {"f1", f1 / n}, {"answers", answers[mode]}});
    }
    // How often the three equivalent variants produced the very same answer.
    for (const char* other : {"lazy-k", "block-attn", "none"}) {
        if (!answers.count("lazy") || !answers.count(other)) continue;
        int same = 0;
        for (size_t i = 0; i < items.size(); ++i) same += answers["lazy"][i] == answers[other][i];
        std::printf("identical answers lazy vs %-10s %d of %zu\n", other, same, items.size());
        out["agreement_with_lazy"][other] = same;
    }
    out["weights"] = o.fp32 ? "fp32" : "quantized (Q4_1/Q8_0 with 8-bit activations)";
    if (!o.json_path.empty()) std::ofstream(o.json_path) << out.dump(1);
    return 0;
}

}  // namespace lazyattn::cli
