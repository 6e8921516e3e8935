// HELD OUT FROM TRAINING: see heldout_tasks.h. Never import these generators, their value pools
// or their sentence templates into training data.
#include "bench/heldout_tasks.h"

#include <algorithm>

#include "bench/task_builder.h"

namespace lazyattn::bench {
namespace {

using tasks::Corpus;
using tasks::distinct;
using tasks::document_words;
using tasks::Draw;
using tasks::make_document;
using tasks::task_of;
using tasks::TaskShape;

// Value pools, disjoint from kv/hop/agg's names, cities and items.
const std::vector<std::string> kFirst = {"Anouk",  "Bartek", "Camille", "Dorian",  "Esme",    "Florin",
                                         "Gwen",   "Hamid",  "Isolde",  "Joaquin", "Kaja",    "Leopold",
                                         "Mirela", "Nuno",   "Oona",    "Paavo",   "Quentin", "Rhea",
                                         "Soren",  "Tamsin", "Ugo",     "Vesna",   "Wendel",  "Yusuf"};
const std::vector<std::string> kLast = {"Albrecht", "Brannigan", "Coelho",   "Drummond",  "Esposito", "Falk",
                                        "Grieve",   "Halvorsen", "Iqbal",    "Jovanovic", "Karlsson", "Lefebvre",
                                        "Mendoza",  "Novak",     "Oyelaran", "Prescott",  "Ramsay",   "Szabo",
                                        "Thorne",   "Underwood", "Valdez",   "Whitlock",  "Yilmaz",   "Zeller"};
const std::vector<std::string> kTowns = {
    "Ravenna",   "Tartu",     "Coimbra", "Olomouc", "Ghent",  "Lucerne", "Uppsala", "Salamanca", "Graz",    "Bruges",
    "Kaunas",    "Trondheim", "Szeged",  "Plovdiv", "Mostar", "Sibiu",   "Ohrid",   "Lublin",    "Esbjerg", "Tampere",
    "Innsbruck", "Heraklion", "Aveiro",  "Perugia", "Leuven", "Maribor", "Pecs",    "Kotor",     "Vaasa",   "Zadar"};
const std::vector<std::string> kInstruments = {
    "cello",    "oboe",  "harp",  "viola",    "bassoon",   "clarinet",    "trombone", "accordion", "banjo",
    "mandolin", "flute", "tuba",  "sitar",    "marimba",   "harpsichord", "ukulele",  "saxophone", "trumpet",
    "violin",   "piano", "organ", "bagpipes", "xylophone", "lute",        "zither",   "dulcimer"};
const std::vector<std::string> kTrades = {
    "architect",    "surgeon",    "pharmacist",  "carpenter",    "journalist", "botanist",  "geologist",
    "librarian",    "pilot",      "translator",  "veterinarian", "astronomer", "locksmith", "jeweller",
    "cartographer", "beekeeper",  "glassblower", "watchmaker",   "chemist",    "sculptor",  "typesetter",
    "brewer",       "shipwright", "potter",      "midwife",      "surveyor"};
const std::vector<std::string> kFirmPrefixes = {
    "Brightwater", "Northgate",   "Ironleaf", "Bluestone", "Redfern",     "Oakhurst", "Silverline", "Westmoor",
    "Greywell",    "Kingsbridge", "Foxglove", "Ashcombe",  "Harrowfield", "Lowmarsh", "Stonebrook", "Fairhaven"};
const std::vector<std::string> kFirmSuffixes = {"Instruments",     "Textiles", "Robotics", "Foods",    "Shipping",
                                                "Pharmaceuticals", "Optics",   "Ceramics", "Software", "Motors"};
const std::vector<std::string> kOfficeCities = {
    "Rotterdam",  "Leipzig", "Lyon",      "Krakow",   "Seville",  "Turin",    "Brno",
    "Gothenburg", "Utrecht", "Zurich",    "Dortmund", "Bordeaux", "Wroclaw",  "Valencia",
    "Bologna",    "Linz",    "Basel",     "Malmo",    "Cluj",     "Debrecen", "Nuremberg",
    "Marseille",  "Poznan",  "Eindhoven", "Grenoble", "Aalborg",  "Kosice",   "Lodz"};
const std::vector<std::string> kHutNames = {
    "Kessel",     "Fernau",  "Glatt",     "Sonnblick",   "Wetterstein", "Adler",    "Gams",    "Steinbock",
    "Krone",      "Blaueis", "Eisenberg", "Wolkenstein", "Tannen",      "Falkner",  "Birkkar", "Mittelberg",
    "Schneeberg", "Grat",    "Moos",      "Karwendel",   "Lindau",      "Hohneck",  "Zirben",  "Murmel",
    "Edelweiss",  "Rotwand", "Hochalm",   "Seeblick",    "Tauern",      "Pasterze", "Brenta",  "Dachstein"};
const std::vector<std::string> kHutKinds = {"Hut", "Refuge", "Lodge", "Cabin"};

constexpr int32_t kMaxDocs = 24;      // every pool above holds at least this many values of a kind
constexpr int32_t kRowsPerTable = 3;  // 72 rows at 24 documents: huts, beds (88 values) suffice

// Two draws, sequenced (the operands of + are not): a seed names the same suite everywhere.
std::string pair_of(Draw& draw, const std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::string first = draw.pick(a);
    return first + " " + draw.pick(b);
}
std::string person(Draw& draw) { return pair_of(draw, kFirst, kLast); }

std::string with_article(const std::string& noun) {
    const bool vowel = !noun.empty() && std::string("aeiou").find(noun[0]) != std::string::npos;
    return (vowel ? "an " : "a ") + noun;
}

template <typename... V>
std::vector<std::string> joined(const V&... lists) {
    std::vector<std::string> out;
    (out.insert(out.end(), lists.begin(), lists.end()), ...);
    return out;
}

// The fact sentences, two wordings each (drawn per sentence).
std::string birth_fact(Draw& draw, const std::string& name, const std::string& town) {
    return draw.below(2) == 0 ? name + " was born in " + town + " and grew up there."
                              : town + " is the birthplace of " + name + ".";
}
std::string instrument_fact(Draw& draw, const std::string& name, const std::string& instrument) {
    return draw.below(2) == 0 ? name + " plays the " + instrument + " in a small chamber ensemble."
                              : "Critics have praised " + name + " as a gifted " + instrument + " player.";
}
std::string trade_fact(Draw& draw, const std::string& name, const std::string& trade) {
    return draw.below(2) == 0 ? name + " works as " + with_article(trade) + "."
                              : "By training and by trade, " + name + " is " + with_article(trade) + ".";
}
std::string founder_fact(Draw& draw, const std::string& name, const std::string& firm, int32_t year) {
    return draw.below(2) == 0 ? name + " founded " + firm + " in " + std::to_string(year) + "."
                              : firm + " was set up in " + std::to_string(year) + " by " + name + ".";
}
std::string office_fact(Draw& draw, const std::string& firm, const std::string& city) {
    return draw.below(2) == 0 ? "The head office of " + firm + " is in " + city + "."
                              : firm + " has its headquarters in " + city + ".";
}

QualityTask make_attr(Draw& draw, const Corpus& corpus, const TaskShape& s, int32_t min_words) {
    QualityTask t = task_of("attr", s);
    const size_t k = size_t(s.k);
    const auto people = distinct(k, [&] { return person(draw); });
    const auto towns = distinct(k, [&] { return draw.pick(kTowns); });
    const auto instruments = distinct(k, [&] { return draw.pick(kInstruments); });
    const auto trades = distinct(k, [&] { return draw.pick(kTrades); });
    const size_t asked = draw.below(3);  // birthplace, instrument, trade
    const Corpus filler = corpus.without(joined(people, towns, instruments, trades));
    for (size_t d = 0; d < k; ++d) {
        const bool answer = int32_t(d) == s.answer_doc;
        std::vector<std::pair<double, std::string>> facts(3);
        for (size_t f = 0; f < 3; ++f) facts[f].first = answer && asked == f ? s.depth : draw.unit();
        facts[0].second = birth_fact(draw, people[d], towns[d]);
        facts[1].second = instrument_fact(draw, people[d], instruments[d]);
        facts[2].second = trade_fact(draw, people[d], trades[d]);
        Passage doc = make_document(draw, filler, document_words(draw, s, min_words), facts);
        doc.title = people[d];  // a biography, titled as such
        t.documents.push_back(std::move(doc));
    }
    const size_t a = size_t(s.answer_doc);
    const std::string& name = people[a];
    if (asked == 0) {
        t.question = "In which town was " + name + " born?";
        t.answers = {towns[a]};
    } else if (asked == 1) {
        t.question = "Which instrument does " + name + " play?";
        t.answers = {instruments[a]};
    } else {
        t.question = "What does " + name + " do for a living?";
        t.answers = {trades[a]};
    }
    t.chance = 1.0 / double(s.k);
    return t;
}

QualityTask make_bridge(Draw& draw, const Corpus& corpus, const TaskShape& s, int32_t min_words) {
    QualityTask t = task_of("bridge", s);
    const size_t k = size_t(s.k);
    int32_t founder_doc = int32_t(draw.below(k - 1));  // any index but the answer's
    if (founder_doc >= s.answer_doc) ++founder_doc;
    const auto people = distinct(k + 2, [&] { return person(draw); });
    const auto firms = distinct(k + 2, [&] { return pair_of(draw, kFirmPrefixes, kFirmSuffixes); });
    const auto cities = distinct(k + 2, [&] { return draw.pick(kOfficeCities); });
    const Corpus filler = corpus.without(joined(people, firms, cities));
    // The asked pair is index 0: its founder in founder_doc, its head office in answer_doc. Other
    // documents d state pair d + 1's founder (even d) or head office (odd d), never both; the
    // founder's document also gives the head office of another company (pair k + 1), so even at
    // k = 2 the prompt names two cities, one beside the founder's name.
    int32_t offices = 0;
    for (int32_t d = 0; d < s.k; ++d) {
        const int32_t year = 1951 + int32_t(draw.below(64));
        std::vector<std::pair<double, std::string>> facts(1);
        facts[0].first = draw.unit();
        if (d == founder_doc) {
            facts[0].second = founder_fact(draw, people[0], firms[0], year);
            facts.emplace_back(draw.unit(), office_fact(draw, firms[k + 1], cities[k + 1]));
            ++offices;
        } else if (d == s.answer_doc) {
            facts[0] = {s.depth, office_fact(draw, firms[0], cities[0])};
            ++offices;
        } else if (d % 2 == 0) {
            facts[0].second = founder_fact(draw, people[size_t(d) + 1], firms[size_t(d) + 1], year);
        } else {
            facts[0].second = office_fact(draw, firms[size_t(d) + 1], cities[size_t(d) + 1]);
            ++offices;
        }
        t.documents.push_back(make_document(draw, filler, document_words(draw, s, min_words), facts));
    }
    t.question = "In which city is the head office of the company that " + people[0] + " founded?";
    t.answers = {cities[0]};
    t.chance = 1.0 / double(offices);  // the cities the documents name
    return t;
}

std::string hut_table(bool markdown, const std::vector<std::vector<std::string>>& rows) {
    std::string out = "\nMountain huts on the ridge trail:\n";
    out += markdown ? "| Hut | Altitude (m) | Beds | Warden |\n|---|---|---|---|\n" : "hut,altitude_m,beds,warden\n";
    for (const auto& r : rows) {
        out += markdown ? "| " + r[0] + " | " + r[1] + " | " + r[2] + " | " + r[3] + " |\n"
                        : r[0] + "," + r[1] + "," + r[2] + "," + r[3] + "\n";
    }
    out.pop_back();
    return out;
}

QualityTask make_table(Draw& draw, const Corpus& corpus, const TaskShape& s, int32_t min_words) {
    QualityTask t = task_of("table", s);
    const size_t rows = size_t(s.k) * kRowsPerTable;
    const auto huts = distinct(rows, [&] { return pair_of(draw, kHutNames, kHutKinds); });
    const auto altitudes = distinct(rows, [&] { return std::to_string(1200 + draw.below(2300)); });
    const auto beds = distinct(rows, [&] { return std::to_string(12 + draw.below(88)); });
    const auto wardens = distinct(rows, [&] { return person(draw); });
    const size_t asked_row = size_t(s.answer_doc) * kRowsPerTable + draw.below(kRowsPerTable);
    const size_t asked_column = draw.below(3);  // altitude, beds, warden
    const Corpus filler = corpus.without(joined(huts, altitudes, beds, wardens));
    for (size_t d = 0; d < size_t(s.k); ++d) {
        std::vector<std::vector<std::string>> table;
        for (size_t r = d * kRowsPerTable; r < (d + 1) * kRowsPerTable; ++r) {
            table.push_back({huts[r], altitudes[r], beds[r], wardens[r]});
        }
        const double depth = int32_t(d) == s.answer_doc ? s.depth : draw.unit();
        const bool markdown = draw.below(2) == 0;
        t.documents.push_back(
            make_document(draw, filler, document_words(draw, s, min_words), {{depth, hut_table(markdown, table)}}));
    }
    const std::string& hut = huts[asked_row];
    // The question names the table and its column as the table does: SmolLM2-135M answers none
    // of 40 asked without ("How many beds does X offer?"), reading the film prose instead.
    const std::string intro = "In the table of mountain huts, ";
    if (asked_column == 0) {
        t.question = intro + "what altitude (m) is given for " + hut + "?";
        t.answers = {altitudes[asked_row]};
    } else if (asked_column == 1) {
        t.question = intro + "how many beds does " + hut + " have?";
        t.answers = {beds[asked_row]};
    } else {
        t.question = intro + "who is the warden of " + hut + "?";
        t.answers = {wardens[asked_row]};
    }
    t.chance = 1.0 / double(rows);  // the cells of the asked column
    return t;
}

std::vector<tasks::Family> heldout_families() {
    return {{"attr", make_attr, kMaxDocs}, {"bridge", make_bridge, kMaxDocs}, {"table", make_table, kMaxDocs}};
}

std::vector<std::string> names_of(const std::vector<tasks::Family>& families) {
    std::vector<std::string> names;
    for (const auto& f : families) names.push_back(f.name);
    return names;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

}  // namespace

const std::vector<std::string>& heldout_family_names() {
    static const std::vector<std::string> names = names_of(heldout_families());
    return names;
}

const std::vector<std::string>& all_family_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> all = names_of(tasks::generator_families());
        for (const auto& n : heldout_family_names()) all.push_back(n);
        return all;
    }();
    return names;
}

const std::vector<std::string>& family_choices() {
    static const std::vector<std::string> choices = [] {
        std::vector<std::string> c = all_family_names();
        c.insert(c.end(), {"heldout", "all"});
        return c;
    }();
    return choices;
}

bool is_heldout_family(const std::string& family) {
    const auto& h = heldout_family_names();
    return std::find(h.begin(), h.end(), family) != h.end();
}

Expected<std::vector<std::string>> expand_families(const std::vector<std::string>& names) {
    std::vector<std::string> out;
    const auto add = [&](const std::string& f) {
        if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
    };
    const auto& all = all_family_names();
    for (const auto& n : names) {
        if (n == "all") {
            for (const auto& f : all) add(f);
        } else if (n == "heldout") {
            for (const auto& f : heldout_family_names()) add(f);
        } else if (std::find(all.begin(), all.end(), n) != all.end()) {
            add(n);
        } else {
            return invalid_argument("unknown task family '" + n + "' (" + joined(all) + "; groups: heldout, all)");
        }
    }
    return out;
}

Expected<std::vector<QualityTask>> make_benchmark_suite(const QualitySuiteOptions& options,
                                                        const std::vector<QaItem>& corpus) {
    QualitySuiteOptions o = options;
    LA_ASSIGN_OR_RETURN(o.families, expand_families(options.families));
    std::vector<tasks::Family> known = tasks::generator_families();
    for (auto& f : heldout_families()) known.push_back(std::move(f));
    return tasks::make_suite(o, corpus, known);
}

}  // namespace lazyattn::bench
