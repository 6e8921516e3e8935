#include "bench/quality_tasks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <sstream>

namespace lazyattn::bench {
namespace {

// Draws are made with rng() and modulo, not std::uniform_*_distribution, whose results differ
// between standard libraries: a seed names the same suite everywhere.
class Draw {
public:
    explicit Draw(uint64_t seed) : rng_(seed) {}
    size_t below(size_t n) { return size_t(rng_() % n); }
    double unit() { return double(rng_() >> 11) * 0x1.0p-53; }
    template <typename T>
    const T& pick(const std::vector<T>& v) {
        return v[below(v.size())];
    }

private:
    std::mt19937_64 rng_;
};

const std::vector<std::string> kAdjectives = {"amber",  "silver", "crimson", "quiet",  "northern", "velvet", "granite",
                                              "hollow", "golden", "copper",  "misty",  "scarlet",  "ivory",  "rapid",
                                              "frozen", "marble", "cobalt",  "hidden", "lunar",    "olive"};
const std::vector<std::string> kNouns = {"falcon", "harbor",  "lantern", "meadow",  "orchid",  "pioneer", "quarry",
                                         "raven",  "summit",  "thistle", "walrus",  "beacon",  "canyon",  "dolphin",
                                         "ember",  "glacier", "heron",   "juniper", "kestrel", "lagoon"};
const std::vector<std::string> kFirstNames = {"Alice", "Bruno", "Clara", "Dmitri", "Elena", "Farid", "Greta",
                                              "Hiro",  "Ines",  "Jonas", "Keira",  "Lucas", "Maya",  "Nils",
                                              "Olga",  "Pedro", "Rosa",  "Samir",  "Tara",  "Viktor"};
const std::vector<std::string> kLastNames = {
    "Abbott",   "Becker",    "Castillo", "Dubois",   "Eriksen", "Fischer", "Gallo", "Hughes", "Ivanova", "Jensen",
    "Kowalski", "Lindqvist", "Moreau",   "Nakamura", "Okafor",  "Petrov",  "Quinn", "Rossi",  "Sato",    "Varga"};
const std::vector<std::string> kItems = {"copper wire", "olive oil",    "wool blankets", "glass bottles",
                                         "rice",        "cedar planks", "tea leaves",    "steel bolts",
                                         "paper rolls", "salt",         "cotton bales",  "lamp oil",
                                         "roof tiles",  "dried fish",   "coffee beans"};
const std::vector<std::string> kCities = {"Lisbon", "Tallinn", "Porto",   "Bergen", "Cork",  "Gdansk",  "Genoa",
                                          "Malaga", "Riga",    "Split",   "Turku",  "Varna", "Bilbao",  "Antwerp",
                                          "Leith",  "Nantes",  "Trieste", "Aarhus", "Kiel",  "Valletta"};

std::vector<std::string> sentences_of(const std::string& text) {
    // The sample's passages often lack the space after a full stop ("in 1962.The company").
    std::vector<std::string> out;
    std::string cur;
    for (size_t i = 0; i < text.size(); ++i) {
        cur += text[i];
        const char c = text[i];
        const bool end = (c == '.' || c == '!' || c == '?') && i + 1 < text.size() &&
                         (text[i + 1] == ' ' || std::isupper(static_cast<unsigned char>(text[i + 1])));
        if (!end && i + 1 < text.size()) continue;
        size_t b = cur.find_first_not_of(' ');
        if (b != std::string::npos) {
            std::string s = cur.substr(b);
            // A sentence of one short word ("J.", "St.") is an abbreviation, not a sentence.
            if (std::count(s.begin(), s.end(), ' ') >= 3) out.push_back(s);
        }
        cur.clear();
    }
    return out;
}

int32_t word_count(const std::string& s) {
    std::istringstream in(s);
    int32_t n = 0;
    for (std::string w; in >> w;) ++n;
    return n;
}

struct Corpus {
    std::vector<std::string> sentences;
    std::vector<std::string> titles;
};

// A document of about `words` words of shuffled filler with `facts` inserted at the given
// depths (0 = before the first sentence, 1 = after the last).
Passage make_document(Draw& draw, const Corpus& corpus, int32_t words,
                      const std::vector<std::pair<double, std::string>>& facts) {
    std::vector<std::string> body;
    int32_t have = 0;
    for (const auto& f : facts) have += word_count(f.second);
    while (have < words) {
        body.push_back(draw.pick(corpus.sentences));
        have += word_count(body.back());
    }
    // Each fact goes to the sentence boundary whose share of the document's words before it is
    // nearest its depth.
    std::vector<int32_t> before(body.size() + 1, 0);
    for (size_t i = 0; i < body.size(); ++i) before[i + 1] = before[i] + word_count(body[i]);
    std::vector<std::pair<size_t, std::string>> at;
    for (const auto& [depth, fact] : facts) {
        size_t best = 0;
        for (size_t i = 1; i <= body.size(); ++i) {
            const double share = double(before[i]) / std::max(1, before.back());
            if (std::abs(share - depth) < std::abs(double(before[best]) / std::max(1, before.back()) - depth)) best = i;
        }
        at.emplace_back(best, fact);
    }
    std::stable_sort(at.begin(), at.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::string text;
    size_t next = 0;
    for (size_t i = 0; i <= body.size(); ++i) {
        while (next < at.size() && at[next].first == i) text += (text.empty() ? "" : " ") + at[next++].second;
        if (i < body.size()) text += (text.empty() ? "" : " ") + body[i];
    }
    return {draw.pick(corpus.titles), text};
}

// Distinct values from a generator.
template <typename F>
std::vector<std::string> distinct(size_t n, F make) {
    std::set<std::string> seen;
    std::vector<std::string> out;
    while (out.size() < n) {
        std::string v = make();
        if (seen.insert(v).second) out.push_back(v);
    }
    return out;
}

struct TaskShape {
    int32_t k;
    int32_t answer_doc;
    double depth;
    int32_t doc_words_max;
};

// The fields every task of a shape shares, and the draws the families share (in this order).
QualityTask task_of(const char* family, const TaskShape& s) {
    QualityTask t;
    t.family = family;
    t.num_docs = s.k;
    t.answer_doc = s.answer_doc;
    t.depth = s.depth;
    return t;
}
std::vector<std::string> account_names(Draw& draw, int32_t n) {
    return distinct(size_t(n), [&] { return draw.pick(kAdjectives) + " " + draw.pick(kNouns); });
}
std::vector<std::string> access_codes(Draw& draw, int32_t n) {
    return distinct(size_t(n), [&] { return std::to_string(10000 + draw.below(90000)); });
}
int32_t document_words(Draw& draw, const TaskShape& s, int32_t min_words) {
    return min_words + int32_t(draw.below(size_t(s.doc_words_max - min_words + 1)));
}

QualityTask make_kv(Draw& draw, const Corpus& corpus, const TaskShape& s, int32_t min_words) {
    QualityTask t = task_of("kv", s);
    const auto keys = account_names(draw, s.k);
    const auto codes = access_codes(draw, s.k);
    for (int32_t d = 0; d < s.k; ++d) {
        const double depth = d == s.answer_doc ? s.depth : draw.unit();
        const std::string fact = "The access code of the " + keys[d] + " account is " + codes[d] + ".";
        t.documents.push_back(make_document(draw, corpus, document_words(draw, s, min_words), {{depth, fact}}));
    }
    t.question = "What is the access code of the " + keys[s.answer_doc] + " account?";
    t.answers = {codes[s.answer_doc]};
    t.chance = 1.0 / s.k;
    return t;
}

QualityTask make_hop(Draw& draw, const Corpus& corpus, const TaskShape& s, int32_t min_words) {
    QualityTask t = task_of("hop", s);
    // The owner's document: any other index.
    int32_t owner_doc = int32_t(draw.below(size_t(s.k - 1)));
    if (owner_doc >= s.answer_doc) ++owner_doc;
    const auto keys = account_names(draw, s.k);
    const auto codes = access_codes(draw, s.k);
    const auto people = distinct(size_t(s.k), [&] { return draw.pick(kFirstNames) + " " + draw.pick(kLastNames); });
    // Document d states either an owner or a code: the asked pair (key 0) in owner_doc and
    // answer_doc, other pairs (key d) elsewhere, alternating kinds.
    for (int32_t d = 0; d < s.k; ++d) {
        std::string fact;
        double depth = draw.unit();
        if (d == owner_doc) {
            fact = people[0] + " is the owner of the " + keys[0] + " account.";
        } else if (d == s.answer_doc) {
            fact = "The access code of the " + keys[0] + " account is " + codes[0] + ".";
            depth = s.depth;
        } else if (d % 2 == 0) {
            fact = people[d] + " is the owner of the " + keys[d] + " account.";
        } else {
            fact = "The access code of the " + keys[d] + " account is " + codes[d] + ".";
        }
        const int32_t words = document_words(draw, s, min_words);
        t.documents.push_back(make_document(draw, corpus, words, {{depth, fact}}));
    }
    t.question = "What is the access code of the account owned by " + people[0] + "?";
    t.answers = {codes[0]};
    t.chance = 1.0 / std::max(1, 1 + (s.k - 2) / 2);  // the codes stated in the documents
    return t;
}

QualityTask make_agg(Draw& draw, const Corpus& corpus, const TaskShape& s, int32_t min_words) {
    QualityTask t;
    t.family = "agg";
    t.num_docs = s.k;
    const int32_t m = 2;  // documents reporting the asked item
    std::vector<int32_t> order(size_t(s.k));
    for (int32_t i = 0; i < s.k; ++i) order[size_t(i)] = i;
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[draw.below(i)]);
    const std::set<int32_t> holders(order.begin(), order.begin() + m);
    const auto items = distinct(2, [&] { return draw.pick(kItems); });
    const auto cities = distinct(size_t(s.k), [&] { return draw.pick(kCities); });
    for (int32_t d = 0; d < s.k; ++d) {
        const std::string& item = holders.count(d) ? items[0] : items[1];
        const std::string fact = "A shipment of " + item + " was delivered to " + cities[d] + ".";
        const int32_t words = document_words(draw, s, min_words);
        t.documents.push_back(make_document(draw, corpus, words, {{draw.unit(), fact}}));
        if (holders.count(d)) t.answers.push_back(cities[d]);
    }
    t.question = "Shipments of " + items[0] + " were delivered to two cities. Which two cities?";
    t.min_answers = 1;
    t.chance = double(m) / double(s.k);  // naming one city of the documents at random
    return t;
}

// SQuAD normalisation: lower case, punctuation and articles removed, whitespace collapsed.
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

std::string joined(const std::vector<std::string>& w) {
    std::string s = " ";
    for (const auto& x : w) s += x + " ";
    return s;
}

bool contains_answer(const std::string& reply, const std::string& answer) {
    const auto a = normalized_words(answer);
    return !a.empty() && joined(normalized_words(reply)).find(joined(a)) != std::string::npos;
}

double f1(const std::string& prediction, const std::string& answer) {
    const auto p = normalized_words(prediction), a = normalized_words(answer);
    std::map<std::string, int> counts;
    for (const auto& w : a) ++counts[w];
    int common = 0;
    for (const auto& w : p) {
        if (counts[w]-- > 0) ++common;
    }
    if (common == 0) return 0.0;
    const double precision = double(common) / double(p.size()), recall = double(common) / double(a.size());
    return 2 * precision * recall / (precision + recall);
}

}  // namespace

Expected<std::vector<QualityTask>> make_quality_suite(const QualitySuiteOptions& o, const std::vector<QaItem>& qa) {
    Corpus corpus;
    for (const auto& item : qa) {
        for (const auto& p : item.passages) {
            if (!p.title.empty()) corpus.titles.push_back(p.title);
            for (auto& s : sentences_of(p.text)) corpus.sentences.push_back(std::move(s));
        }
    }
    if (corpus.sentences.empty() || corpus.titles.empty()) return invalid_argument("no filler sentences in the corpus");
    if (o.families.empty() || o.doc_counts.empty()) return invalid_argument("no task families or document counts");
    for (const auto& f : o.families) {
        if (f != "kv" && f != "hop" && f != "agg") {
            return invalid_argument("unknown task family '" + f + "' (kv, hop, agg)");
        }
    }
    for (int32_t k : o.doc_counts) {
        if (k < 2 || k > 64) return invalid_argument("documents per question must be in [2, 64]");
    }
    if (o.min_doc_words < 10 || o.max_doc_words < o.min_doc_words) return invalid_argument("bad document length range");
    Draw draw(o.seed);
    std::vector<QualityTask> out;
    const size_t cells = o.families.size() * o.doc_counts.size();
    for (size_t c = 0; c < cells; ++c) {
        const std::string& family = o.families[c / o.doc_counts.size()];
        const int32_t k = o.doc_counts[c % o.doc_counts.size()];
        // Questions spread evenly over the cells; within a cell, answer positions cycle through
        // every document index and depths through five levels, so each is covered.
        const int32_t n = o.num_questions / int32_t(cells) + (int32_t(c) < o.num_questions % int32_t(cells) ? 1 : 0);
        const int32_t words_max =
            std::max(o.min_doc_words, std::min(o.max_doc_words, o.max_prompt_words / std::max(1, k)));
        for (int32_t i = 0; i < n; ++i) {
            const TaskShape shape{k, i % k, double(i % 5) / 4.0, words_max};
            if (family == "kv") out.push_back(make_kv(draw, corpus, shape, o.min_doc_words));
            if (family == "hop") out.push_back(make_hop(draw, corpus, shape, o.min_doc_words));
            if (family == "agg") out.push_back(make_agg(draw, corpus, shape, o.min_doc_words));
        }
    }
    return out;
}

std::vector<QualityTask> qa_tasks(const std::vector<QaItem>& items) {
    std::vector<QualityTask> out;
    for (const auto& item : items) {
        QualityTask t;
        t.family = "2wiki";
        t.num_docs = int32_t(item.passages.size());
        t.documents = item.passages;
        t.question = item.question;
        t.answers = item.answers;
        out.push_back(std::move(t));
    }
    return out;
}

bool reply_is_correct(const QualityTask& task, const std::string& reply) {
    if (task.answers.empty()) return false;
    const auto named = std::count_if(task.answers.begin(), task.answers.end(),
                                     [&](const std::string& a) { return contains_answer(reply, a); });
    return named >= std::max(1, task.min_answers);
}

bool reply_names_all(const QualityTask& task, const std::string& reply) {
    return !task.answers.empty() && std::all_of(task.answers.begin(), task.answers.end(),
                                                [&](const std::string& a) { return contains_answer(reply, a); });
}

double reply_f1(const QualityTask& task, const std::string& reply) {
    double best = 0;
    for (const auto& a : task.answers) best = std::max(best, f1(reply, a));
    return best;
}

}  // namespace lazyattn::bench
