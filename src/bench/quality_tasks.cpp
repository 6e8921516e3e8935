#include "bench/quality_tasks.h"

#include "bench/task_builder.h"

#include <algorithm>
#include <map>
#include <set>

namespace lazyattn::bench {
namespace tasks {
namespace {

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

std::vector<std::string> account_names(Draw& draw, int32_t n) {
    return distinct(size_t(n), [&] { return draw.pick(kAdjectives) + " " + draw.pick(kNouns); });
}
std::vector<std::string> access_codes(Draw& draw, int32_t n) {
    return distinct(size_t(n), [&] { return std::to_string(10000 + draw.below(90000)); });
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

}  // namespace

std::vector<Family> generator_families() { return {{"kv", make_kv}, {"hop", make_hop}, {"agg", make_agg}}; }

}  // namespace tasks

namespace {

using tasks::normalized_text;
using tasks::normalized_words;

bool contains_answer(const std::string& reply, const std::string& answer) {
    return !normalized_words(answer).empty() &&
           normalized_text(reply).find(normalized_text(answer)) != std::string::npos;
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
    return tasks::make_suite(o, qa, tasks::generator_families());
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
