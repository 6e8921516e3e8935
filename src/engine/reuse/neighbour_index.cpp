#include "engine/reuse/neighbour_index.h"

#include <algorithm>
#include <cmath>

#include <xxhash.h>

#include "engine/request/tenant.h"

namespace lazyattn::engine {
namespace {

constexpr double kK1 = 1.2, kB = 0.75;
// A query's work is bounded, since it runs on the engine thread for every conditioned document
// the cache misses: its kMaxQueryTerms rarest tokens are scored, and a token in more than
// kMaxPostings documents is skipped (its idf is then small: it says little about similarity).
constexpr size_t kMaxQueryTerms = 64, kMaxPostings = 4096;

std::vector<std::pair<int32_t, int32_t>> count_tokens(const std::vector<int32_t>& tokens) {
    std::vector<int32_t> sorted = tokens;
    std::sort(sorted.begin(), sorted.end());
    std::vector<std::pair<int32_t, int32_t>> counts;
    for (int32_t t : sorted) {
        if (counts.empty() || counts.back().first != t) counts.push_back({t, 0});
        ++counts.back().second;
    }
    return counts;
}

}  // namespace

uint64_t NeighbourIndex::key_of(const std::vector<int32_t>& tokens) {
    return XXH3_64bits(tokens.data(), tokens.size() * sizeof(int32_t));
}

void NeighbourIndex::add(const std::string& tenant, const std::vector<int32_t>& tokens) {
    if (tokens.empty() || int64_t(tokens.size()) > limits_.max_tokens) return;
    const uint64_t key = key_of(tokens);
    const std::string account = tenant_account(tenant);
    if (auto t = tenants_.find(tenant); t != tenants_.end()) {
        if (auto it = t->second.documents.find(key); it != t->second.documents.end()) {
            if (it->second.tokens == tokens) {  // known: now the most recent
                auto& ages = owners_.at(account).by_age;
                ages.splice(ages.end(), ages, it->second.age);
                return;
            }
            remove(tenant, key);  // a hash collision: the newer document wins
        }
    }
    Tenant& t = tenants_[tenant];
    Owner& o = owners_[account];
    unrank(account, o);
    Document& doc = t.documents[key];
    doc.tokens = tokens;
    doc.counts = count_tokens(tokens);
    doc.order = next_order_++;
    doc.age = o.by_age.insert(o.by_age.end(), {tenant, key});
    for (const auto& [token, n] : doc.counts) t.postings[token].push_back({key, n});
    t.total_length += int64_t(tokens.size());
    ++o.documents;
    o.tokens += int64_t(tokens.size());
    rank(account, o);
    ++num_documents_;
    num_tokens_ += int64_t(tokens.size());
    evict(account);
}

void NeighbourIndex::evict(const std::string& adding) {
    while (num_documents_ > limits_.max_documents || num_tokens_ > limits_.max_tokens) {
        const bool by_count = num_documents_ > limits_.max_documents;
        const auto adder = owners_.find(adding);
        std::string victim;
        if (by_count) {
            victim = by_documents_.rbegin()->second;
            if (adder != owners_.end() && adder->second.documents == by_documents_.rbegin()->first) victim = adding;
        } else {
            victim = by_tokens_.rbegin()->second;
            if (adder != owners_.end() && adder->second.tokens == by_tokens_.rbegin()->first) victim = adding;
        }
        const auto oldest = owners_.at(victim).by_age.front();  // a copy: remove() erases it
        remove(oldest.first, oldest.second);
    }
}

void NeighbourIndex::unrank(const std::string& name, const Owner& o) {
    by_documents_.erase({o.documents, name});
    by_tokens_.erase({o.tokens, name});
}

void NeighbourIndex::rank(const std::string& name, const Owner& o) {
    by_documents_.insert({o.documents, name});
    by_tokens_.insert({o.tokens, name});
}

int32_t NeighbourIndex::num_documents(const std::string& tenant) const {
    const auto t = tenants_.find(tenant);
    return t == tenants_.end() ? 0 : int32_t(t->second.documents.size());
}

void NeighbourIndex::remove(const std::string& tenant, uint64_t key) {
    auto t = tenants_.find(tenant);
    if (t == tenants_.end()) return;
    auto it = t->second.documents.find(key);
    if (it == t->second.documents.end()) return;
    const std::string account = tenant_account(tenant);
    const auto o = owners_.find(account);
    unrank(account, o->second);
    const Document& doc = it->second;
    for (const auto& [token, n] : doc.counts) {
        auto p = t->second.postings.find(token);
        auto& list = p->second;
        const auto at = std::find_if(list.begin(), list.end(), [&](const auto& e) { return e.first == key; });
        *at = list.back();
        list.pop_back();
        if (list.empty()) t->second.postings.erase(p);
    }
    const int64_t length = int64_t(doc.tokens.size());
    t->second.total_length -= length;
    o->second.tokens -= length;
    --o->second.documents;
    num_tokens_ -= length;
    --num_documents_;
    o->second.by_age.erase(doc.age);
    t->second.documents.erase(it);
    if (t->second.documents.empty()) tenants_.erase(t);
    if (o->second.documents == 0) {
        owners_.erase(o);
    } else {
        rank(account, o->second);
    }
}

std::unordered_map<uint64_t, double> NeighbourIndex::scores(const Tenant& t, const std::vector<int32_t>& tokens) const {
    std::unordered_map<uint64_t, double> acc;
    const double n = double(t.documents.size());
    const double avg = double(t.total_length) / std::max(1.0, n);
    std::vector<std::pair<size_t, const std::vector<std::pair<uint64_t, int32_t>>*>> terms;  // (df, postings)
    for (const auto& [token, unused] : count_tokens(tokens)) {
        auto p = t.postings.find(token);
        if (p != t.postings.end() && p->second.size() <= kMaxPostings) terms.push_back({p->second.size(), &p->second});
    }
    std::sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    if (terms.size() > kMaxQueryTerms) terms.resize(kMaxQueryTerms);
    for (const auto& [count, postings] : terms) {
        const double df = double(count);
        const double idf = std::log(1.0 + (n - df + 0.5) / (df + 0.5));
        for (const auto& [key, tf] : *postings) {
            const double len = double(t.documents.at(key).tokens.size());
            acc[key] += idf * tf * (kK1 + 1.0) / (tf + kK1 * (1.0 - kB + kB * len / avg));
        }
    }
    return acc;
}

std::vector<const std::vector<int32_t>*> NeighbourIndex::nearest(const std::string& tenant,
                                                                 const std::vector<int32_t>& tokens, int32_t k) const {
    std::vector<const std::vector<int32_t>*> out;
    auto t = tenants_.find(tenant);
    if (t == tenants_.end() || k <= 0 || tokens.empty()) return out;
    struct Candidate {
        double score;
        uint64_t order;
        const std::vector<int32_t>* tokens;
    };
    std::vector<Candidate> found;
    for (const auto& [key, s] : scores(t->second, tokens)) {
        const Document& doc = t->second.documents.at(key);
        if (s <= 0.0 || doc.tokens == tokens) continue;
        found.push_back({s, doc.order, &doc.tokens});
    }
    const size_t keep = std::min(found.size(), size_t(k));
    std::partial_sort(found.begin(), found.begin() + keep, found.end(), [](const Candidate& a, const Candidate& b) {
        return a.score != b.score ? a.score > b.score : a.order < b.order;
    });
    for (size_t i = 0; i < keep; ++i) out.push_back(found[i].tokens);
    return out;
}

double NeighbourIndex::score(const std::string& tenant, const std::vector<int32_t>& tokens,
                             const std::vector<int32_t>& doc) const {
    auto t = tenants_.find(tenant);
    if (t == tenants_.end()) return 0.0;
    const auto all = scores(t->second, tokens);
    const auto it = all.find(key_of(doc));
    return it == all.end() || t->second.documents.at(it->first).tokens != doc ? 0.0 : it->second;
}

}  // namespace lazyattn::engine
