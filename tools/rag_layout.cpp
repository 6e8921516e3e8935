// la_rag_layout: the engine's side of the block fine-tuning recipe (scripts/finetune/).
//
//   render MODEL IN.jsonl OUT.jsonl
//       Lays out training samples exactly as lazyattn lays out a RAG request
//       (engine::build_rag_request: the model's chat template, the preamble as segment 0, each
//       document a segment tokenized alone, the question and the assistant header as the tail)
//       and writes their token ids. The recipe trains on these ids, so the model learns the
//       layout it is served with. Input lines: {"system"?, "documents": [{"title","text"} or
//       "text", ...], "question", "answer"} for RAG samples, or {"text"} for plain prose (BOS as
//       the model's metadata says, then the text). Output lines: {"segments": [[ids]...],
//       "preamble": bool, "tail": [ids], "answer": [ids]} (answer = the answer's tokens and the
//       end-of-turn token(s) the template writes after an assistant message), or {"tokens": [ids]}.
//       A line without an answer, or whose layout exceeds --max-tokens, is an error naming it;
//       with --answer-optional a line without "answer" (absent or null) is laid out with
//       "answer": [] (the distillation objective trains on the teacher's own continuation).
//   logits MODEL REQUEST.json OUT_DIR --variant lazy --variant lazy-k:anchor ...
//       The tail logits ([tail rows, vocab], float32, row-major) of one request under each
//       variant (MODE[:REUSE], as `bench quality` names them), with fp32 weights and fp32 KV:
//       OUT_DIR/<variant>.f32, and OUT_DIR/layout.json with the ids. The request is one line of
//       the render input; its answer's ids are appended to the tail so every answer row counts.
//   tasks CORPUS.jsonl OUT.jsonl --seed S --questions N
//       `bench quality`'s synthetic multi-document tasks (bench::make_quality_suite: kv, hop, agg
//       over k documents of real prose from CORPUS, a 2Wiki-format file) for one seed, as samples
//       for render: {"family", "k", "question", "documents", "answers", "answer"} (answer: the
//       reply the recipe trains on, every answer joined by " and "). The recipe draws its
//       training tasks from seeds that `bench quality` does not use, and this same command with
//       the benchmark's seed lists its questions, so that none is trained on.
//   nll MODEL TEXTS.jsonl
//       Full-attention negative log-likelihood of plain texts ({"text"} lines, each in windows
//       of --window tokens): prints {"tokens": N, "nll": sum, "ppl": exp(sum / N)} as JSON.
//       Weights as stored in the file (the model as served), KV f32.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench/qa_dataset.h"
#include "bench/quality_tasks.h"
#include "engine/loading/loaded_model.h"
#include "engine/request/document_reuse.h"
#include "engine/request/rag_prompt.h"
#include "engine/sync_engine.h"
#include "loader/gguf_file.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace la = lazyattn;
using nlohmann::json;

namespace {

[[noreturn]] void die(const std::string& msg) {
    std::cerr << "la_rag_layout: error: " << msg << "\n";
    std::exit(1);
}

template <typename T>
T value_or_die(la::Expected<T> e, const std::string& what) {
    if (!e.ok()) die(what + ": " + e.status().to_string());
    return std::move(e).value();
}

struct Vocab {
    std::unique_ptr<la::loader::GgufFile> file;
    std::unique_ptr<la::tokenizer::Tokenizer> tok;
    std::optional<la::tokenizer::ChatTemplate> chat;
};

Vocab open_vocab(const std::string& path) {
    Vocab v;
    v.file = value_or_die(la::loader::GgufFile::open(path), "cannot open " + path);
    v.tok = value_or_die(la::tokenizer::Tokenizer::from_gguf(*v.file), path + ": tokenizer");
    v.chat = value_or_die(la::tokenizer::select_chat_template("", *v.file), path + ": chat template");
    return v;
}

std::string where(const std::string& path, int line) { return path + ": line " + std::to_string(line); }

// The answer as the model generates it: its tokens, then the template's end of the assistant
// turn up to the first end-of-generation token (or EOS when the template writes none).
std::vector<int32_t> answer_tokens(const Vocab& v, const json& j, const std::string& at) {
    if (!j.contains("answer") || !j["answer"].is_string() || j["answer"].get<std::string>().empty()) {
        die(at + ": no answer (a RAG sample needs a non-empty \"answer\" string)");
    }
    const std::string answer = j["answer"];
    std::vector<int32_t> out = v.tok->encode(answer, false, false);
    std::vector<int32_t> end;
    if (v.chat) {
        const std::string q = j.value("question", "?");
        std::vector<la::tokenizer::ChatMessage> messages{{"user", q.empty() ? "?" : q}, {"assistant", answer}};
        auto pieces = value_or_die(v.chat->render(messages, false), at + ": rendering the answer turn");
        size_t i = 0;
        while (i < pieces.size() && pieces[i].message != 1) ++i;
        if (i == pieces.size()) die(at + ": the chat template does not write the assistant's answer as given");
        const std::vector<la::tokenizer::ChatPiece> rest(pieces.begin() + long(i) + 1, pieces.end());
        for (int32_t id : la::tokenizer::encode_chat(*v.tok, rest)) {
            end.push_back(id);
            if (v.tok->is_end_of_generation(id)) break;
        }
        if (!end.empty() && !v.tok->is_end_of_generation(end.back())) end.clear();
    }
    if (end.empty()) {
        if (v.tok->eos_id() < 0) die(at + ": the model has no end-of-turn or EOS token to end an answer with");
        end.push_back(v.tok->eos_id());
    }
    out.insert(out.end(), end.begin(), end.end());
    return out;
}

la::engine::RagRequest rag_request(const Vocab& v, const json& j, const std::string& at) {
    la::engine::RagPromptText text;
    text.system = j.value("system", "");
    if (!j.contains("question") || !j["question"].is_string()) die(at + ": no \"question\" string");
    text.question = j["question"];
    if (!j.contains("documents") || !j["documents"].is_array()) die(at + ": no \"documents\" array");
    for (const auto& d : j["documents"]) {
        if (d.is_string()) {
            text.documents.push_back(la::engine::format_document("", d.get<std::string>()));
        } else if (d.is_object() && d.contains("text")) {
            text.documents.push_back(la::engine::format_document(d.value("title", ""), d["text"].get<std::string>()));
        } else {
            die(at + ": a document must be a string or {\"title\", \"text\"}");
        }
    }
    return value_or_die(la::engine::build_rag_request(*v.tok, v.chat, text), at + ": layout");
}

int run_render(const std::string& model, const std::string& in_path, const std::string& out_path, int max_tokens,
               bool answer_optional) {
    const Vocab v = open_vocab(model);
    std::ifstream in(in_path);
    if (!in) die("cannot read " + in_path);
    const std::string tmp = out_path + ".tmp";
    std::ofstream out(tmp);
    if (!out) die("cannot write " + tmp);
    std::string line;
    int n = 0;
    for (int line_no = 1; std::getline(in, line); ++line_no) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const std::string at = where(in_path, line_no);
        const json j = json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) die(at + ": not a JSON object");
        json o;
        size_t total = 0;
        if (j.contains("text") && !j.contains("question")) {
            std::vector<int32_t> ids = v.tok->encode(j["text"].get<std::string>(), true, false);
            total = ids.size();
            o["tokens"] = std::move(ids);
        } else {
            auto req = rag_request(v, j, at);
            const bool no_answer = answer_optional && (!j.contains("answer") || j["answer"].is_null());
            auto answer = no_answer ? std::vector<int32_t>{} : answer_tokens(v, j, at);
            for (const auto& s : req.segments) total += s.size();
            total += req.tail.size() + answer.size();
            o["segments"] = req.segments;
            o["preamble"] = req.first_segment_is_preamble;
            o["tail"] = req.tail;
            o["answer"] = std::move(answer);
        }
        if (max_tokens > 0 && int(total) > max_tokens) {
            die(at + ": " + std::to_string(total) + " tokens, more than --max-tokens " + std::to_string(max_tokens) +
                " (shorten its documents or raise the limit)");
        }
        out << o.dump() << "\n";
        ++n;
    }
    out.close();
    if (!out) die("writing " + tmp + " failed");
    std::filesystem::rename(tmp, out_path);
    std::fprintf(stderr, "la_rag_layout: %d samples -> %s\n", n, out_path.c_str());
    return 0;
}

la::engine::LoadedModel load(const std::string& model, bool fp32, int threads) {
    la::model::WeightOptions wo;
    wo.dequantize_all = fp32;
    return value_or_die(la::engine::load_model(model, threads, wo), "cannot load " + model);
}

std::unique_ptr<la::engine::SyncEngine> make_engine(la::engine::LoadedModel& lm, la::engine::CacheMode mode) {
    la::engine::EngineConfig ec;
    ec.cache_mode = mode;
    ec.kv_types = la::kernels::same_kv_types(la::kernels::KvDtype::kF32);
    ec.kv_cache_mb = 256;
    return value_or_die(la::engine::SyncEngine::create(*lm.model, *lm.tokenizer, ec), "engine");
}

int run_logits(const std::string& model, const std::string& request_path, const std::string& out_dir,
               const std::vector<std::string>& variants, int threads) {
    Vocab v = open_vocab(model);
    std::ifstream in(request_path);
    std::string line;
    if (!in || !std::getline(in, line)) die("cannot read a request from " + request_path);
    const json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) die(request_path + ": not JSON");
    auto req = rag_request(v, j, request_path);
    const auto answer = answer_tokens(v, j, request_path);
    req.tail.insert(req.tail.end(), answer.begin(), answer.end());
    std::filesystem::create_directories(out_dir);
    json layout = {{"segments", req.segments},
                   {"preamble", req.first_segment_is_preamble},
                   {"tail", req.tail},
                   {"answer_len", answer.size()}};
    auto lm = load(model, true, threads);
    const int32_t vocab = lm.tokenizer->vocab_size();
    for (const std::string& spec : variants) {
        const auto variant = value_or_die(la::engine::parse_reuse_variant(spec), "variant " + spec);
        auto eng = make_engine(lm, variant.mode);
        req.reuse = variant.reuse;
        const auto logits = value_or_die(eng->tail_logits(req), "tail logits (" + spec + ")");
        // Full attention (none, prefix) flattens the prompt: its rows are every prompt token's;
        // the tail's are the last ones.
        const size_t want = req.tail.size() * size_t(vocab);
        if (logits.size() < want || logits.size() % size_t(vocab) != 0) die("unexpected logits size for " + spec);
        const float* rows = logits.data() + (logits.size() - want);
        const std::string path = out_dir + "/" + spec + ".f32";
        std::ofstream f(path, std::ios::binary);
        f.write(reinterpret_cast<const char*>(rows), std::streamsize(want * sizeof(float)));
        if (!f) die("writing " + path + " failed");
        layout["variants"].push_back(spec);
    }
    layout["vocab"] = vocab;
    std::ofstream(out_dir + "/layout.json") << layout.dump() << "\n";
    return 0;
}

int run_tasks(const std::string& corpus_path, const std::string& out_path, uint64_t seed, int questions,
              int max_prompt_words, const std::vector<int32_t>& doc_counts) {
    auto corpus = value_or_die(la::bench::read_qa_file(corpus_path), "corpus");
    la::bench::QualitySuiteOptions so;
    so.seed = seed;
    so.num_questions = questions;
    if (max_prompt_words > 0) so.max_prompt_words = max_prompt_words;
    if (!doc_counts.empty()) so.doc_counts = doc_counts;
    const auto tasks = value_or_die(la::bench::make_quality_suite(so, corpus), "tasks");
    const std::string tmp = out_path + ".tmp";
    std::ofstream out(tmp);
    for (const auto& t : tasks) {
        json docs = json::array();
        for (const auto& d : t.documents) docs.push_back({{"title", d.title}, {"text", d.text}});
        std::string answer;
        for (const auto& a : t.answers) answer += (answer.empty() ? "" : " and ") + a;
        out << json{{"family", t.family}, {"k", t.num_docs},      {"question", t.question},
                    {"documents", docs},  {"answers", t.answers}, {"answer", answer}}
                   .dump()
            << "\n";
    }
    out.close();
    if (!out) die("writing " + tmp + " failed");
    std::filesystem::rename(tmp, out_path);
    return 0;
}

int run_nll(const std::string& model, const std::string& texts_path, int window, int threads) {
    auto lm = load(model, false, threads);
    auto eng = make_engine(lm, la::engine::CacheMode::kNone);
    std::ifstream in(texts_path);
    if (!in) die("cannot read " + texts_path);
    const int32_t vocab = lm.tokenizer->vocab_size();
    double nll = 0;
    int64_t count = 0;
    std::string line;
    for (int line_no = 1; std::getline(in, line); ++line_no) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const json j = json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.contains("text")) die(where(texts_path, line_no) + ": no \"text\"");
        const auto ids = lm.tokenizer->encode(j["text"].get<std::string>(), true, false);
        for (size_t start = 0; start + 1 < ids.size(); start += size_t(window)) {
            la::engine::RagRequest req;
            req.tail.assign(ids.begin() + long(start), ids.begin() + long(std::min(ids.size(), start + window)));
            if (req.tail.size() < 2) break;
            const auto logits = value_or_die(eng->tail_logits(req), where(texts_path, line_no));
            for (size_t r = 0; r + 1 < req.tail.size(); ++r) {
                const float* row = logits.data() + r * size_t(vocab);
                double m = row[0];
                for (int32_t t = 1; t < vocab; ++t) m = std::max(m, double(row[t]));
                double z = 0;
                for (int32_t t = 0; t < vocab; ++t) z += std::exp(double(row[t]) - m);
                nll += m + std::log(z) - double(row[req.tail[r + 1]]);
                ++count;
            }
        }
    }
    if (count == 0) die(texts_path + ": no text to score");
    std::cout << json{{"tokens", count}, {"nll", nll}, {"ppl", std::exp(nll / double(count))}}.dump() << "\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"The engine's side of the block fine-tuning recipe (scripts/finetune/)"};
    app.require_subcommand(1);
    std::string model, in, out;
    int max_tokens = 0, threads = 0, window = 512;
    bool answer_optional = false;
    std::vector<std::string> variants;
    auto* render = app.add_subcommand("render", "token ids of samples in the engine's RAG layout");
    render->add_option("model", model, "GGUF file (only its tokenizer and chat template are read)")->required();
    render->add_option("input", in, "JSONL samples")->required();
    render->add_option("output", out, "JSONL token ids (written to a temporary name, then renamed)")->required();
    render->add_option("--max-tokens", max_tokens, "refuse a sample longer than this (0: no limit)");
    render->add_flag("--answer-optional", answer_optional, "lay out a sample without \"answer\" with an empty one");
    auto* logits = app.add_subcommand("logits", "tail logits per variant, fp32 weights and KV");
    logits->add_option("model", model)->required();
    logits->add_option("request", in, "one JSON line: system, documents, question, answer")->required();
    logits->add_option("out_dir", out)->required();
    logits->add_option("--variant", variants, "MODE[:REUSE], e.g. lazy, lazy-k:anchor, none")->required();
    logits->add_option("--threads", threads);
    uint64_t seed = 1;
    int questions = 486, max_prompt_words = 0;
    std::vector<int32_t> doc_counts;
    auto* tasks = app.add_subcommand("tasks", "bench quality's synthetic tasks for one seed, as samples");
    tasks->add_option("corpus", in, "2Wiki-format JSONL whose passages give the filler prose")->required();
    tasks->add_option("output", out)->required();
    tasks->add_option("--seed", seed);
    tasks->add_option("--questions", questions)->check(CLI::Range(1, 1 << 20));
    tasks->add_option("--max-prompt-words", max_prompt_words, "0: bench quality's default");
    tasks->add_option("--doc-counts", doc_counts, "documents per question (default 2 5 10 20)");
    auto* nll = app.add_subcommand("nll", "full-attention NLL and perplexity of plain texts");
    nll->add_option("model", model)->required();
    nll->add_option("texts", in, "JSONL of {\"text\"}")->required();
    nll->add_option("--window", window, "tokens per scored window")->check(CLI::Range(2, 1 << 20));
    nll->add_option("--threads", threads);
    CLI11_PARSE(app, argc, argv);
    if (render->parsed()) return run_render(model, in, out, max_tokens, answer_optional);
    if (logits->parsed()) return run_logits(model, in, out, variants, threads);
    if (tasks->parsed()) return run_tasks(in, out, seed, questions, max_prompt_words, doc_counts);
    return run_nll(model, in, window, threads);
}
