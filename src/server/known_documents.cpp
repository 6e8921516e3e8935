#include "server/known_documents.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <mutex>
#include <random>

#include "engine/request/tenant.h"

namespace lazyattn::server {
namespace {

constexpr uint64_t kMod = (uint64_t(1) << 61) - 1;

uint64_t mul_mod(uint64_t a, uint64_t b) {
    const __uint128_t p = __uint128_t(a) * b;
    uint64_t r = uint64_t(p & kMod) + uint64_t(p >> 61);
    return r >= kMod ? r - kMod : r;
}

uint64_t add_mod(uint64_t a, uint64_t b) {
    const uint64_t r = a + b;
    return r >= kMod ? r - kMod : r;
}

uint64_t pow_mod(uint64_t b, uint64_t e) {
    uint64_t r = 1;
    for (; e != 0; e >>= 1, b = mul_mod(b, b)) {
        if (e & 1) r = mul_mod(r, b);
    }
    return r;
}

// Polynomial hash of [data, data + n): sum of (byte + 1) * base^(n-1-i).
uint64_t hash_of(const char* data, size_t n, uint64_t base) {
    uint64_t h = 0;
    for (size_t i = 0; i < n; ++i) h = add_mod(mul_mod(h, base), uint64_t(uint8_t(data[i])) + 1);
    return h;
}

// The hash of text[b, b + len) from prefix hashes H (H[i] = hash of text[0, i)), given base^len.
uint64_t cut(const std::vector<uint64_t>& H, size_t b, size_t len, uint64_t pow_len) {
    return add_mod(H[b + len], kMod - mul_mod(H[b], pow_len));
}

std::string ltrim(const std::string& s) {
    size_t b = 0;
    while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    return s.substr(b);
}

// `text` cut at the known documents in it: head, documents and raw text between, tail (false:
// none found).
struct KnownSplit {
    std::string head;
    std::vector<MessageDocument> items;
    std::string tail;
};

bool split_known(const KnownDocuments& index, const std::string& tenant, const std::string& text, KnownSplit& out) {
    const std::vector<KnownMatch> matches = index.find(tenant, text);
    if (matches.empty()) return false;
    out.head = text.substr(0, matches[0].begin);
    for (size_t i = 0; i < matches.size(); ++i) {
        const KnownMatch& m = matches[i];
        out.items.push_back({text.substr(m.begin, m.end - m.begin), "", false});
        const size_t next = i + 1 < matches.size() ? matches[i + 1].begin : text.size();
        std::string rest = ltrim(text.substr(m.end, next - m.end));
        if (i + 1 == matches.size()) {
            out.tail = std::move(rest);
        } else if (!rest.empty()) {
            out.items.push_back({std::move(rest), "", true});
        }
    }
    return true;
}

int32_t message_of(const std::vector<std::string>& roles, const char* role, bool last) {
    const int32_t n = int32_t(roles.size());
    for (int32_t k = 0; k < n; ++k) {
        const int32_t i = last ? n - 1 - k : k;
        if (roles[size_t(i)] == role) return i;
    }
    return -1;
}

}  // namespace

Status find_known_documents(const KnownDocuments& index, const std::string& tenant, const DocumentsFrom& from,
                            const std::vector<std::string>& roles, const std::vector<std::string>& content,
                            int32_t max_documents, MessageDocuments& found) {
    using M = DocumentsFrom::Message;
    if (!found.documents.empty()) {  // around a source's documents
        KnownSplit before, after;
        std::vector<MessageDocument> docs;
        if (split_known(index, tenant, found.before, before)) {
            found.before = std::move(before.head);
            docs = std::move(before.items);
            if (const std::string rest = ltrim(before.tail); !rest.empty()) docs.push_back({rest, "", true});
        }
        for (auto& d : found.documents) docs.push_back(std::move(d));
        if (split_known(index, tenant, found.after, after)) {
            if (const std::string head = ltrim(after.head); !head.empty()) docs.push_back({head, "", true});
            for (auto& d : after.items) docs.push_back(std::move(d));
            found.after = std::move(after.tail);
        }
        found.documents = std::move(docs);
    } else {
        std::vector<int32_t> candidates;
        if (from.message == M::kIndex) {
            if (from.index >= int32_t(roles.size())) {
                return invalid_argument("the documents message index " + std::to_string(from.index) +
                                        " is past the last message (" + std::to_string(roles.size()) + " messages)");
            }
            candidates.push_back(from.index);
        }
        if (from.message == M::kAuto || from.message == M::kLastUser)
            candidates.push_back(message_of(roles, "user", true));
        if (from.message == M::kAuto || from.message == M::kSystem)
            candidates.push_back(message_of(roles, "system", false));
        for (int32_t m : candidates) {
            KnownSplit split;
            if (m < 0 || !split_known(index, tenant, content[size_t(m)], split)) continue;
            found.message = m;
            found.before = std::move(split.head);
            found.documents = std::move(split.items);
            found.after = std::move(split.tail);
            break;
        }
    }
    if (int32_t(found.documents.size()) > max_documents) {
        return invalid_argument("messages[" + std::to_string(found.message) + "] holds " +
                                std::to_string(found.documents.size()) + " documents and text between them; at most " +
                                std::to_string(max_documents) + " per request (--max-documents)");
    }
    return Status();
}

KnownDocuments::KnownDocuments() : KnownDocuments(Limits{}) {}

KnownDocuments::KnownDocuments(Limits limits) : limits_(limits) {
    std::mt19937_64 rng(std::random_device{}());
    base_ = 256 + rng() % (kMod - 512);
    base64_ = rng() | 1;
    pow64_window_ = 1;
    for (size_t i = 0; i < kWindowBytes; ++i) pow64_window_ *= base64_;
}

uint64_t KnownDocuments::window_key(const char* data) const {
    uint64_t h = 0;
    for (size_t i = 0; i < kWindowBytes; ++i) h = h * base64_ + uint64_t(uint8_t(data[i])) + 1;
    return h;
}

void KnownDocuments::rebuild_bloom(Tenant& t) {
    size_t bits = kMinBloomBits;
    while (bits < 64 * t.documents.size()) bits *= 2;
    const int64_t before = tenant_cost(t);
    t.bloom.assign(bits / 64, 0);
    for (const auto& [id, d] : t.documents) {
        const size_t bit = bloom_bit(t, d.window);
        t.bloom[bit / 64] |= uint64_t(1) << (bit % 64);
    }
    resize(*t.owner, 0, tenant_cost(t) - before);
}

void KnownDocuments::add(const std::string& tenant, const std::string& text) {
    if (text.size() < kWindowBytes || text.size() > limits_.max_document_bytes) return;
    Document d;
    d.hash = hash_of(text.data(), text.size(), base_);
    d.window = window_key(text.data());
    std::unique_lock<std::shared_mutex> lock(mu_);
    ++add_stats_.adds;
    Tenant& t = tenant_of(tenant);
    if (refresh(t, d.hash, text)) return;
    make_room_in_window(t, d.window);
    d.pow_len = pow_mod(base_, text.size());
    d.text = text;
    insert(t, std::move(d));
    evict_to_limits(*t.owner->name);
}

KnownDocuments::Tenant& KnownDocuments::tenant_of(const std::string& tenant) {
    auto [at, fresh] = tenants_.try_emplace(tenant);
    Tenant& t = at->second;
    if (!fresh) return t;
    t.name = &at->first;
    auto [o, new_owner] = owners_.try_emplace(engine::tenant_account(tenant));
    t.owner = &o->second;
    if (new_owner) {
        t.owner->name = &o->first;
        by_documents_.insert({0, o->first});
        by_bytes_.insert({0, o->first});
        resize(*t.owner, 0, owner_cost(o->first));
    }
    ++t.owner->tenants;
    resize(*t.owner, 0, tenant_cost(t));
    return t;
}

// A document `t` already holds is only made the most recent (true).
bool KnownDocuments::refresh(Tenant& t, uint64_t hash, const std::string& text) {
    auto same = t.by_hash.find(hash);
    if (same == t.by_hash.end()) return false;
    for (uint64_t id : same->second) {
        Document& known = t.documents.at(id);
        if (known.text != text) continue;
        known.stamp = next_stamp_++;
        t.owner->by_age.splice(t.owner->by_age.end(), t.owner->by_age, known.age);
        return true;
    }
    return false;
}

// At most kMaxPerWindow documents per start window: the least recent of them goes, found by
// their stamps (never by walking the age list, which holds every document of the owner).
void KnownDocuments::make_room_in_window(Tenant& t, uint64_t window) {
    auto bucket = t.by_window.find(window);
    if (bucket == t.by_window.end() || bucket->second.size() < kMaxPerWindow) return;
    uint64_t oldest = bucket->second.front();
    for (uint64_t id : bucket->second) {
        ++add_stats_.documents_examined;
        if (t.documents.at(id).stamp < t.documents.at(oldest).stamp) oldest = id;
    }
    ++add_stats_.evictions;
    erase(t, oldest);
}

void KnownDocuments::insert(Tenant& t, Document d) {
    const uint64_t id = next_id_++;
    d.stamp = next_stamp_++;
    d.age = t.owner->by_age.insert(t.owner->by_age.end(), AgeEntry{&t, id});
    t.by_window[d.window].push_back(id);
    t.by_hash[d.hash].push_back(id);
    const size_t bit = bloom_bit(t, d.window);
    t.bloom[bit / 64] |= uint64_t(1) << (bit % 64);
    const int64_t c = cost(d);
    t.documents.emplace(id, std::move(d));
    resize(*t.owner, 1, c);
    if (t.bloom.size() * 64 < 64 * t.documents.size()) rebuild_bloom(t);
}

void KnownDocuments::erase(Tenant& t, uint64_t id) {
    auto it = t.documents.find(id);
    if (it == t.documents.end()) return;
    const Document& d = it->second;
    auto drop = [id](std::unordered_map<uint64_t, std::vector<uint64_t>>& map, uint64_t key) {
        auto at = map.find(key);
        if (at == map.end()) return;
        at->second.erase(std::remove(at->second.begin(), at->second.end(), id), at->second.end());
        if (at->second.empty()) map.erase(at);
    };
    drop(t.by_window, d.window);
    drop(t.by_hash, d.hash);
    t.owner->by_age.erase(d.age);
    resize(*t.owner, -1, -cost(d));
    t.documents.erase(it);
}

// A tenant goes with its last document, and an owner with its last tenant, their tables'
// bytes with them: an empty one costs nothing, so tenants never outnumber documents.
void KnownDocuments::drop_if_empty(Tenant& t) {
    if (!t.documents.empty()) return;
    Owner& o = *t.owner;
    resize(o, 0, -tenant_cost(t));
    --o.tenants;
    tenants_.erase(std::string(*t.name));  // a copy: the key goes with the node
    if (o.tenants > 0) return;
    resize(o, 0, -owner_cost(*o.name));
    const std::string owner = *o.name;
    by_documents_.erase({o.documents, owner});
    by_bytes_.erase({o.bytes, owner});
    owners_.erase(owner);
}

void KnownDocuments::resize(Owner& o, int64_t documents, int64_t bytes) {
    if (documents != 0) {
        by_documents_.erase({o.documents, *o.name});
        o.documents += documents;
        by_documents_.insert({o.documents, *o.name});
    }
    if (bytes != 0) {
        by_bytes_.erase({o.bytes, *o.name});
        o.bytes += bytes;
        by_bytes_.insert({o.bytes, *o.name});
    }
    num_documents_ += documents;
    num_bytes_ += bytes;
}

// The owner holding the most (documents past the document bound, bytes past the byte bound);
// `adding` on a tie: it caused the overflow.
KnownDocuments::Owner& KnownDocuments::largest(bool by_count, const std::string& adding) {
    ++add_stats_.owners_examined;
    const auto& ranks = by_count ? by_documents_ : by_bytes_;
    const auto top = ranks.rbegin();
    if (auto adder = owners_.find(adding); adder != owners_.end()) {
        if ((by_count ? adder->second.documents : adder->second.bytes) == top->first) return adder->second;
    }
    return owners_.at(top->second);
}

void KnownDocuments::evict_to_limits(std::string adding) {
    while (num_documents_ > limits_.max_documents || num_bytes_ > limits_.max_bytes) {
        if (num_documents_ == 0) return;  // the tables of tenants without documents: none are kept
        Owner& victim = largest(num_documents_ > limits_.max_documents, adding);
        if (victim.by_age.empty()) return;
        const AgeEntry oldest = victim.by_age.front();
        ++add_stats_.evictions;
        erase(*oldest.tenant, oldest.id);
        drop_if_empty(*oldest.tenant);
    }
}

std::vector<KnownMatch> KnownDocuments::find(const std::string& tenant, const std::string& text,
                                             KnownScanStats* stats) const {
    std::vector<KnownMatch> out;
    KnownScanStats local;
    KnownScanStats& s = stats ? *stats : local;
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto found = tenants_.find(tenant);
    if (found == tenants_.end() || text.size() < kWindowBytes) return out;
    const Tenant& t = found->second;
    const size_t n = text.size();
    // Prefix hashes of text[h0, ...), H[i] of text[h0, h0 + i): computed only where a candidate
    // is checked, from its start to as far as it reaches; restarted at a candidate past them, so
    // each byte is hashed at most once.
    std::vector<uint64_t> H(1, 0);
    size_t h0 = 0;
    auto reach = [&](size_t b, size_t e) {
        if (b > h0 + H.size() - 1) {
            h0 = b;
            H.assign(1, 0);
        }
        for (size_t i = h0 + H.size() - 1; i < e; ++i) {
            H.push_back(add_mod(mul_mod(H.back(), base_), uint64_t(uint8_t(text[i])) + 1));
            ++s.bytes_hashed;
        }
    };
    uint64_t w = window_key(text.data());
    for (size_t p = 0; p + kWindowBytes <= n;) {
        ++s.positions;
        const size_t bit = bloom_bit(t, w);
        auto bucket = t.by_window.end();
        if (t.bloom[bit / 64] >> (bit % 64) & 1) {
            ++s.bitmap_hits;
            bucket = t.by_window.find(w);
        }
        size_t best = 0;
        if (bucket != t.by_window.end()) {
            ++s.window_hits;
            for (uint64_t id : bucket->second) {
                const Document& d = t.documents.at(id);
                const size_t len = d.text.size();
                if (len <= best || p + len > n) continue;
                ++s.candidates;
                reach(p, p + len);
                if (cut(H, p - h0, len, d.pow_len) != d.hash) continue;
                s.bytes_compared += len;
                if (std::memcmp(text.data() + p, d.text.data(), len) != 0) {
                    ++s.failed_verifies;
                    continue;
                }
                best = len;
            }
        }
        if (best == 0) {
            if (p + kWindowBytes < n) {
                w = w * base64_ - (uint64_t(uint8_t(text[p])) + 1) * pow64_window_ +
                    uint64_t(uint8_t(text[p + kWindowBytes])) + 1;
            }
            ++p;
            continue;
        }
        out.push_back({p, p + best});
        p += best;
        if (p + kWindowBytes <= n) w = window_key(text.data() + p);  // W bytes per match of >= W
    }
    return out;
}

int64_t KnownDocuments::num_documents() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return num_documents_;
}

int64_t KnownDocuments::num_bytes() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return num_bytes_;
}

int64_t KnownDocuments::num_documents(const std::string& tenant) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = tenants_.find(tenant);
    return it == tenants_.end() ? 0 : int64_t(it->second.documents.size());
}

int64_t KnownDocuments::num_tenants() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return int64_t(tenants_.size());
}

int64_t KnownDocuments::owner_bytes(const std::string& owner) const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = owners_.find(owner);
    return it == owners_.end() ? 0 : it->second.bytes;
}

KnownAddStats KnownDocuments::add_stats() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return add_stats_;
}

}  // namespace lazyattn::server
