// NeighbourIndex: the corpus a neighbour-conditioned document (DocumentReuse::neighbours) is
// encoded against. Each tenant's documents, as token ids, in an inverted index scored by Okapi
// BM25 (k1 = 1.2, b = 0.75, Lucene's non-negative idf): a document's neighbours are the indexed
// documents scoring highest with its distinct tokens as the query. Token ids rather than words,
// so it needs no tokenizer and no language: a shared name is shared token ids, and the idf
// discounts the template's and the language's common tokens. A query scores with its 64 rarest
// tokens, skipping tokens found in more than 4096 documents, so its cost is bounded however
// large the corpus or the document.
//
// Tenants never see each other's documents (a neighbour's content flows into the KV). Memory is
// bounded over every tenant together, and shared fairly by owner, the API key (tenant_account:
// every cache_salt of a key is one owner, as for the pin quota): past a limit, the owner holding
// the most (documents past the document limit, tokens past the token limit) loses its least
// recently added or refreshed document, whichever of its salts holds it. An owner alone may use
// the whole bound, yet one flooding the index, under as many salts as it likes, only ever evicts
// its own documents once it holds the most: an owner holding no more than its fair share (the
// limit / the number of owners indexed) never loses a document to another's flood, since past
// the limit the one holding the most holds more than that. (Per-owner caps would give the same
// protection but waste the bound when few owners use it.) A tenant goes with its last document.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

namespace lazyattn::engine {

class NeighbourIndex {
public:
    struct Limits {
        int32_t max_documents = 32768;   // over every tenant, shared fairly (above)
        int64_t max_tokens = 8LL << 20;  // token ids kept, over every tenant (32 MiB), shared fairly
    };
    NeighbourIndex() = default;
    explicit NeighbourIndex(Limits limits) : limits_(limits) {}

    // Indexes a document of `tenant` (a document already there is only refreshed).
    void add(const std::string& tenant, const std::vector<int32_t>& tokens);
    // The k documents of `tenant` most similar to `tokens`, most similar first: ties to the one
    // indexed first; `tokens` itself and documents sharing no token with it are never returned.
    std::vector<const std::vector<int32_t>*> nearest(const std::string& tenant, const std::vector<int32_t>& tokens,
                                                     int32_t k) const;
    // BM25 of indexed document `doc` for the query `tokens` (0 when either is not indexed or
    // nothing is shared); for tests and diagnostics.
    double score(const std::string& tenant, const std::vector<int32_t>& tokens, const std::vector<int32_t>& doc) const;

    int32_t num_documents() const { return num_documents_; }
    int64_t num_tokens() const { return num_tokens_; }
    int32_t num_documents(const std::string& tenant) const;

private:
    struct Document {
        std::vector<int32_t> tokens;
        std::vector<std::pair<int32_t, int32_t>> counts;            // (token, occurrences), by token
        uint64_t order = 0;                                         // when added: breaks ties
        std::list<std::pair<std::string, uint64_t>>::iterator age;  // in its owner's by_age
    };
    struct Tenant {
        std::unordered_map<uint64_t, Document> documents;  // by content hash
        // token -> (document hash, occurrences)
        std::unordered_map<int32_t, std::vector<std::pair<uint64_t, int32_t>>> postings;
        int64_t total_length = 0;
    };
    // An API key's account: what fairness compares, over all its tenants.
    struct Owner {
        // (tenant, document hash) of its documents, least recently added or refreshed first.
        std::list<std::pair<std::string, uint64_t>> by_age;
        int32_t documents = 0;
        int64_t tokens = 0;
    };

    void remove(const std::string& tenant, uint64_t key);
    // Past a limit, the oldest documents of the owner holding the most go (`adding`'s owner first
    // on a tie: it caused the overflow).
    void evict(const std::string& adding);
    // by_documents_ / by_tokens_ entries of an owner, taken out before its sizes change and put
    // back after.
    void unrank(const std::string& name, const Owner& o);
    void rank(const std::string& name, const Owner& o);
    static uint64_t key_of(const std::vector<int32_t>& tokens);
    // Every indexed document's BM25 for `tokens`, by hash (the query document itself included).
    std::unordered_map<uint64_t, double> scores(const Tenant& t, const std::vector<int32_t>& tokens) const;

    Limits limits_;
    std::map<std::string, Tenant> tenants_;  // by tenant (key and salt): lookup
    std::map<std::string, Owner> owners_;    // by account (key): fairness
    // (documents, owner) and (tokens, owner) of every owner: the largest last.
    std::set<std::pair<int32_t, std::string>> by_documents_;
    std::set<std::pair<int64_t, std::string>> by_tokens_;
    int32_t num_documents_ = 0;
    int64_t num_tokens_ = 0;
    uint64_t next_order_ = 0;
};

}  // namespace lazyattn::engine
