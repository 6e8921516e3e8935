#include "bench/task_builder.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace lazyattn::bench::tasks {
namespace {

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

}  // namespace

Corpus corpus_of(const std::vector<QaItem>& items) {
    Corpus corpus;
    for (const auto& item : items) {
        for (const auto& p : item.passages) {
            if (!p.title.empty()) corpus.titles.push_back(p.title);
            for (auto& s : sentences_of(p.text)) corpus.sentences.push_back(std::move(s));
        }
    }
    return corpus;
}

Corpus Corpus::without(const std::vector<std::string>& words) const {
    std::vector<std::string> phrases;
    for (const auto& w : words) {
        if (!normalized_words(w).empty()) phrases.push_back(normalized_text(w));
    }
    const auto keep = [&](const std::string& s) {
        const std::string text = normalized_text(s);
        return std::none_of(phrases.begin(), phrases.end(),
                            [&](const std::string& p) { return text.find(p) != std::string::npos; });
    };
    Corpus out;
    std::copy_if(sentences.begin(), sentences.end(), std::back_inserter(out.sentences), keep);
    std::copy_if(titles.begin(), titles.end(), std::back_inserter(out.titles), keep);
    return out;
}

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

std::string normalized_text(const std::string& text) {
    std::string s = " ";
    for (const auto& w : normalized_words(text)) s += w + " ";
    return s;
}

int32_t word_count(const std::string& s) {
    std::istringstream in(s);
    int32_t n = 0;
    for (std::string w; in >> w;) ++n;
    return n;
}

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
    bool block_before = false;  // the last piece was a block: the next starts on a line of its own
    const auto append = [&](const std::string& piece, bool block) {
        if (block) {
            text += (text.empty() ? "" : "\n") + piece.substr(1);
        } else {
            text += (text.empty() ? "" : block_before ? "\n" : " ") + piece;
        }
        block_before = block;
    };
    size_t next = 0;
    for (size_t i = 0; i <= body.size(); ++i) {
        while (next < at.size() && at[next].first == i) {
            append(at[next].second, !at[next].second.empty() && at[next].second.front() == '\n');
            ++next;
        }
        if (i < body.size()) append(body[i], false);
    }
    return {draw.pick(corpus.titles), text};
}

QualityTask task_of(const char* family, const TaskShape& s) {
    QualityTask t;
    t.family = family;
    t.num_docs = s.k;
    t.answer_doc = s.answer_doc;
    t.depth = s.depth;
    return t;
}

int32_t document_words(Draw& draw, const TaskShape& s, int32_t min_words) {
    return min_words + int32_t(draw.below(size_t(s.doc_words_max - min_words + 1)));
}

Expected<std::vector<QualityTask>> make_suite(const QualitySuiteOptions& o, const std::vector<QaItem>& qa,
                                              const std::vector<Family>& known) {
    const Corpus corpus = corpus_of(qa);
    if (corpus.sentences.empty() || corpus.titles.empty()) return invalid_argument("no filler sentences in the corpus");
    if (o.families.empty() || o.doc_counts.empty()) return invalid_argument("no task families or document counts");
    std::vector<const Family*> families;
    for (const auto& name : o.families) {
        const auto f = std::find_if(known.begin(), known.end(), [&](const Family& x) { return x.name == name; });
        if (f == known.end()) {
            std::string names;
            for (const auto& x : known) names += (names.empty() ? "" : ", ") + x.name;
            return invalid_argument("unknown task family '" + name + "' (" + names + ")");
        }
        families.push_back(&*f);
    }
    for (int32_t k : o.doc_counts) {
        if (k < 2 || k > 64) return invalid_argument("documents per question must be in [2, 64]");
        for (const Family* f : families) {
            if (k > f->max_docs) {
                return invalid_argument("task family '" + f->name + "' takes at most " + std::to_string(f->max_docs) +
                                        " documents per question (asked for " + std::to_string(k) + ")");
            }
        }
    }
    if (o.min_doc_words < 10 || o.max_doc_words < o.min_doc_words) return invalid_argument("bad document length range");
    Draw draw(o.seed);
    std::vector<QualityTask> out;
    const size_t cells = families.size() * o.doc_counts.size();
    for (size_t c = 0; c < cells; ++c) {
        const Family& family = *families[c / o.doc_counts.size()];
        const int32_t k = o.doc_counts[c % o.doc_counts.size()];
        const int32_t n = o.num_questions / int32_t(cells) + (int32_t(c) < o.num_questions % int32_t(cells) ? 1 : 0);
        const int32_t words_max =
            std::max(o.min_doc_words, std::min(o.max_doc_words, o.max_prompt_words / std::max(1, k)));
        for (int32_t i = 0; i < n; ++i) {
            const TaskShape shape{k, i % k, double(i % 5) / 4.0, words_max};
            out.push_back(family.make(draw, corpus, shape, o.min_doc_words));
        }
    }
    return out;
}

}  // namespace lazyattn::bench::tasks
