// KnownDocuments: the documents the server has seen, per tenant, so that a flat prompt that
// carries one of them (anywhere, joined to its neighbours by anything) is laid out with it as a
// cached segment (`documents_from: "known"`, docs/api.md "Known documents").
//
// It lives in the server, not the engine: it maps client text to documents, and text is what the
// server holds before tokenizing (the engine sees tokens; a passage's tokens inside a prompt differ
// from its tokens alone at its edges, so only the text can be found). It is fed with every text
// document of every request (`documents`, parts, delimiter chunks, found matches) and every
// /v1/documents registration, once the request passed its checks (a refused one indexes
// nothing) and before it runs. Titled documents are not indexed (their
// segment holds the title, which a flat prompt does not). Documents shorter than kWindowBytes are
// not indexed either (too short to be told from ordinary text).
//
// The scan is Rabin-Karp over windows of kWindowBytes: each indexed document is keyed by a
// rolling hash of its first kWindowBytes (mod 2^64, probed in a bitmap first), and a candidate
// whose key matches is checked against the document's whole-text hash in O(1) from prefix hashes
// of the text (polynomial mod 2^61-1, a base drawn at random per process, so clients cannot aim
// collisions; computed only as far as a candidate reaches), then verified byte for byte before
// use. Matching is leftmost, then longest (a document that is a prefix of another loses to
// it), non-overlapping. Cost: one hash step and one bitmap probe per byte, at most
// kMaxPerWindow O(1) checks per window hit, and byte comparisons only over accepted matches
// (which do not overlap) or full-hash collisions: linear in the text whatever it holds. The
// prefix hashes take 8 bytes per byte of text a candidate reaches.
//
// Tenants (API key and cache_salt) never see each other's documents. Memory is bounded over every
// tenant together and shared fairly by owner, the API key (engine::tenant_account: every
// cache_salt of a key is one owner, as for the pin quota), as engine::NeighbourIndex is: past a
// limit the owner holding the most loses its least recently added or seen document, whichever of
// its salts holds it. So a key minting salts only ever evicts its own documents. The bytes count
// each tenant's fixed tables too (maps, bitmap, name), and a tenant is dropped with its last
// document, so minted salts cost their owner what they cost the process. At most kMaxPerWindow
// documents share one start window; another evicts the least recent of them. Adding a document
// costs O(log owners) plus O(kMaxPerWindow), whatever the index holds.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/status.h"
#include "server/message_documents.h"

namespace lazyattn::server {

// Where a known document occurs in a text: [begin, end).
struct KnownMatch {
    size_t begin = 0;
    size_t end = 0;
};

// What one scan spent (tests count operations rather than time).
struct KnownScanStats {
    uint64_t positions = 0;        // windows hashed
    uint64_t bitmap_hits = 0;      // windows the bitmap lets through (then looked up)
    uint64_t window_hits = 0;      // windows whose key is indexed
    uint64_t candidates = 0;       // whole-text hash checks
    uint64_t bytes_hashed = 0;     // prefix hashes computed for them
    uint64_t bytes_compared = 0;   // byte-for-byte verification
    uint64_t failed_verifies = 0;  // whole-text hash equal, bytes not
};

// What adds spent choosing what to evict, summed since the index was made (tests count
// operations rather than time).
struct KnownAddStats {
    uint64_t adds = 0;
    uint64_t evictions = 0;           // documents evicted by a bound or a full start window
    uint64_t documents_examined = 0;  // documents compared to find a window's least recent
    uint64_t owners_examined = 0;     // owners compared to find the one holding the most
};

class KnownDocuments {
public:
    static constexpr size_t kWindowBytes = 32;
    static constexpr size_t kMaxPerWindow = 16;
    struct Limits {
        int64_t max_documents = 65536;        // over every tenant, shared fairly
        int64_t max_bytes = 256LL << 20;      // document text kept, over every tenant
        size_t max_document_bytes = 1 << 20;  // longer documents are not indexed
    };
    KnownDocuments();
    explicit KnownDocuments(Limits limits);

    // Indexes `text` for `tenant` (one already there is only refreshed). Thread-safe.
    void add(const std::string& tenant, const std::string& text);
    // Every occurrence of a known document of `tenant` in `text`, left to right. Thread-safe.
    std::vector<KnownMatch> find(const std::string& tenant, const std::string& text,
                                 KnownScanStats* stats = nullptr) const;

    int64_t num_documents() const;
    // Accounted bytes: documents (text and bookkeeping) and every tenant's and owner's tables.
    int64_t num_bytes() const;
    int64_t num_documents(const std::string& tenant) const;
    // Tenants holding documents (never more than the documents: one goes with its last).
    int64_t num_tenants() const;
    // Accounted bytes of `owner` (an API key's account, engine::tenant_account), all its salts.
    int64_t owner_bytes(const std::string& owner) const;
    KnownAddStats add_stats() const;
    const Limits& limits() const { return limits_; }

private:
    struct Tenant;
    struct Owner;
    // One document in its owner's age list.
    struct AgeEntry {
        Tenant* tenant;
        uint64_t id;
    };
    struct Document {
        std::string text;
        uint64_t hash = 0;     // of the whole text
        uint64_t pow_len = 0;  // base^size, to cut a prefix hash
        uint64_t window = 0;   // window_key of the first kWindowBytes
        uint64_t stamp = 0;    // when last added or seen: the larger, the more recent
        std::list<AgeEntry>::iterator age;
    };
    struct Tenant {
        const std::string* name = nullptr;  // its key in tenants_
        Owner* owner = nullptr;
        std::unordered_map<uint64_t, Document> documents;               // by id
        std::unordered_map<uint64_t, std::vector<uint64_t>> by_window;  // window hash -> ids
        std::unordered_map<uint64_t, std::vector<uint64_t>> by_hash;    // whole hash -> ids
        // Window hashes, one bit each, probed before by_window: >= 64 bits per window, so a text
        // with nothing known costs a bit probe per byte. Bits of evicted windows stay (a false hit
        // costs one by_window lookup) until the next growth rebuilds it.
        std::vector<uint64_t> bloom = std::vector<uint64_t>(kMinBloomBits / 64);
    };
    // An API key's account: what fairness compares, over all its tenants.
    struct Owner {
        const std::string* name = nullptr;  // its key in owners_
        std::list<AgeEntry> by_age;         // its documents, least recent first
        int64_t documents = 0;
        int64_t bytes = 0;
        int64_t tenants = 0;
    };
    static constexpr size_t kMinBloomBits = 512;
    static size_t bloom_bit(const Tenant& t, uint64_t window) {
        return size_t((window * 0x9E3779B97F4A7C15ULL) >> 40) & (t.bloom.size() * 64 - 1);
    }
    // Accounted bytes of one document (text and bookkeeping: its map nodes, bucket slots and age
    // entry); with tenant_cost, the gauge is within 10% of the heap the index takes, whether
    // 65,536 documents share one tenant or each has its own salt (measured).
    static int64_t cost(const Document& d) { return int64_t(d.text.size()) + kDocumentBytes; }
    // Accounted bytes of a tenant's fixed tables (the struct, its maps' first bucket arrays, its
    // bitmap, its name in tenants_) and of an owner's.
    static int64_t tenant_cost(const Tenant& t) {
        return kTenantBytes + int64_t(t.name->size() + t.bloom.size() * sizeof(uint64_t));
    }
    static int64_t owner_cost(const std::string& name) { return kOwnerBytes + 3 * int64_t(name.size()); }
    static constexpr int64_t kDocumentBytes = 320;
    static constexpr int64_t kTenantBytes = int64_t(sizeof(Tenant)) + 512;
    static constexpr int64_t kOwnerBytes = int64_t(sizeof(Owner)) + 256;

    Tenant& tenant_of(const std::string& tenant);
    bool refresh(Tenant& t, uint64_t hash, const std::string& text);
    void make_room_in_window(Tenant& t, uint64_t window);
    void insert(Tenant& t, Document d);
    void erase(Tenant& t, uint64_t id);
    void drop_if_empty(Tenant& t);
    void evict_to_limits(std::string adding);  // a copy: its owner may go
    Owner& largest(bool by_count, const std::string& adding);
    // Changes an owner's sizes (and the totals), keeping by_documents_ and by_bytes_ in order.
    void resize(Owner& o, int64_t documents, int64_t bytes);
    void rebuild_bloom(Tenant& t);

    Limits limits_;
    uint64_t base_;
    // Window keys: a rolling polynomial hash mod 2^64 (one multiply per byte; a collision only
    // costs a candidate check, never a wrong match).
    uint64_t window_key(const char* data) const;
    uint64_t base64_;
    uint64_t pow64_window_;
    mutable std::shared_mutex mu_;
    std::unordered_map<std::string, Tenant> tenants_;  // by tenant (key and salt): lookup
    std::unordered_map<std::string, Owner> owners_;    // by account (key): fairness
    // (documents, owner) and (bytes, owner) of every owner: the largest last.
    std::set<std::pair<int64_t, std::string>> by_documents_;
    std::set<std::pair<int64_t, std::string>> by_bytes_;
    uint64_t next_id_ = 1;
    uint64_t next_stamp_ = 1;
    int64_t num_documents_ = 0;
    int64_t num_bytes_ = 0;
    KnownAddStats add_stats_;
};

// documents_from known: lays the known documents of `tenant` found in the chosen message into
// `found`, each a document as from any other source; the text around them stays where it was:
// before the first one it ends segment 0 (`before`), after the last one it starts the tail
// (`after`), and between two it is a raw segment of its own. Whitespace right after a document
// is dropped (the document ends with its blank line). Where `found` already holds a source's
// documents (delimiter, parts), its `before` and `after` are searched; otherwise the message
// `from` names (auto: the last user message where it holds a known document, else the first
// system message). kInvalidArgument: more than max_documents documents.
Status find_known_documents(const KnownDocuments& index, const std::string& tenant, const DocumentsFrom& from,
                            const std::vector<std::string>& roles, const std::vector<std::string>& content,
                            int32_t max_documents, MessageDocuments& found);

}  // namespace lazyattn::server
