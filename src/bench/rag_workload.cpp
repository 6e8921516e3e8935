#include "bench/rag_workload.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <random>

#include <nlohmann/json.hpp>

namespace lazyattn::bench {
namespace {

// Every passage and question of the sample, in file order.
Expected<std::pair<std::vector<std::string>, std::vector<std::string>>> read_texts(const std::string& path) {
    std::ifstream in(path);
    if (!in) return not_found("cannot read passages from '" + path + "'");
    std::vector<std::string> passages, questions;
    std::string line;
    while (std::getline(in, line)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded()) continue;
        questions.push_back(j.value("question", ""));
        for (const auto& d : j.value("documents", nlohmann::json::array())) {
            passages.push_back(d.value("title", "") + "\n" + d.value("text", "") + "\n\n");
        }
    }
    if (passages.empty()) return invalid_argument("'" + path + "' holds no passages");
    return std::make_pair(passages, questions);
}

// `n` tokens of real text: passages taken cyclically from a random start.
std::vector<int32_t> text_tokens(const std::vector<std::vector<int32_t>>& pieces, int32_t n, std::mt19937_64& rng) {
    std::vector<int32_t> out;
    size_t i = rng() % pieces.size();
    while (int32_t(out.size()) < n) {
        const auto& p = pieces[i++ % pieces.size()];
        out.insert(out.end(), p.begin(), p.end());
    }
    out.resize(n);
    return out;
}

}  // namespace

Status WorkloadConfig::validate() const {
    if (num_docs <= 0 || doc_tokens <= 0 || tail_tokens <= 0 || num_requests <= 0 || output_tokens < 0) {
        return invalid_argument("workload sizes must be positive");
    }
    if (docs_per_request <= 0 || docs_per_request > num_docs) {
        return invalid_argument("k must be in [1, number of documents]");
    }
    if (zipf_s < 0 || arrival_rate < 0) return invalid_argument("skew and arrival rate must be >= 0");
    if (preamble_tokens < 0) return invalid_argument("the preamble length must not be negative");
    return {};
}

Expected<Workload> make_workload(const WorkloadConfig& c, const tokenizer::Tokenizer& tok) {
    LA_RETURN_IF_ERROR(c.validate());
    LA_ASSIGN_OR_RETURN(auto texts, read_texts(c.passages_path));
    std::vector<std::vector<int32_t>> passages, questions;
    for (const auto& p : texts.first) passages.push_back(tok.encode(p, false, false));
    for (const auto& q : texts.second) questions.push_back(tok.encode("Question: " + q + "\nAnswer:", false, false));

    std::mt19937_64 rng(c.seed);
    Workload w;
    for (int32_t d = 0; d < c.num_docs; ++d) w.docs.push_back(text_tokens(passages, c.doc_tokens, rng));
    // Drawn after the documents, so a workload without one keeps its documents and digest.
    const std::vector<int32_t> preamble =
        c.preamble_tokens > 0 ? text_tokens(questions, c.preamble_tokens, rng) : std::vector<int32_t>{};
    // Zipf over a random permutation of the pool: rank r (1-based) has weight r^-s.
    std::vector<int32_t> order(c.num_docs);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    w.popularity.assign(c.num_docs, 0.0);
    for (int32_t r = 0; r < c.num_docs; ++r) w.popularity[order[r]] = std::pow(double(r + 1), -c.zipf_s);
    const double total = std::accumulate(w.popularity.begin(), w.popularity.end(), 0.0);
    for (double& p : w.popularity) p /= total;

    std::discrete_distribution<int32_t> pick(w.popularity.begin(), w.popularity.end());
    std::exponential_distribution<double> gap(c.arrival_rate > 0 ? c.arrival_rate : 1.0);
    double t = 0;
    for (int32_t i = 0; i < c.num_requests; ++i) {
        std::vector<int32_t> chosen;
        while (int32_t(chosen.size()) < c.docs_per_request) {  // k distinct documents
            const int32_t d = pick(rng);
            if (std::find(chosen.begin(), chosen.end(), d) == chosen.end()) chosen.push_back(d);
        }
        std::shuffle(chosen.begin(), chosen.end(), rng);
        engine::RagRequest r;
        if (!preamble.empty()) {
            r.segments.push_back(preamble);
            r.first_segment_is_preamble = true;
        }
        for (int32_t d : chosen) r.segments.push_back(w.docs[d]);
        r.tail = text_tokens(questions, c.tail_tokens, rng);
        r.max_tokens = c.output_tokens;
        r.ignore_eos = true;
        w.requests.push_back(std::move(r));
        w.request_docs.push_back(std::move(chosen));
        if (c.arrival_rate > 0) t += gap(rng);
        w.arrival_s.push_back(t);
    }
    return w;
}

uint64_t Workload::digest() const {
    XXH3_state_t* st = XXH3_createState();
    XXH3_64bits_reset(st);
    for (const auto& r : requests) {
        for (const auto& s : r.segments) XXH3_64bits_update(st, s.data(), s.size() * sizeof(int32_t));
        XXH3_64bits_update(st, r.tail.data(), r.tail.size() * sizeof(int32_t));
    }
    for (double a : arrival_s) XXH3_64bits_update(st, &a, sizeof a);
    const uint64_t h = XXH3_64bits_digest(st);
    XXH3_freeState(st);
    return h;
}

double analytic_hit_ratio(std::vector<double> popularity, int64_t capacity) {
    std::sort(popularity.begin(), popularity.end(), std::greater<>());
    double h = 0;
    for (int64_t i = 0; i < capacity && i < int64_t(popularity.size()); ++i) h += popularity[i];
    return std::min(1.0, h);
}

}  // namespace lazyattn::bench
