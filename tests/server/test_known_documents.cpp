// KnownDocuments: the per-tenant index of documents the server has seen, and the layout
// documents_from known makes of a message around them. Counts operations, never time.
#include "server/known_documents.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "engine/request/tenant.h"

namespace lazyattn::server {
namespace {

const std::string kA = "Gold is a chemical element with the symbol Au and atomic number 79.";
const std::string kB = "Silver is a chemical element with the symbol Ag and atomic number 47.";
const std::string kC = "Copper is a chemical element with the symbol Cu and atomic number 29.";

std::vector<std::string> matched(const KnownDocuments& k, const std::string& tenant, const std::string& text) {
    std::vector<std::string> out;
    for (const KnownMatch& m : k.find(tenant, text)) out.push_back(text.substr(m.begin, m.end - m.begin));
    return out;
}

TEST(KnownDocuments, FindsEveryKnownDocumentAtAnyOffsetWithAnySeparator) {
    KnownDocuments k;
    for (const auto& d : {kA, kB, kC}) k.add("t", d);
    for (const std::string sep : {"", " ", "\n\n", "\n\n[2] "}) {
        const std::string text = "Answer from these passages." + sep + kB + sep + kA + sep + "Question: which is Au?";
        EXPECT_EQ(matched(k, "t", text), (std::vector<std::string>{kB, kA})) << "separator '" << sep << "'";
    }
    // At offset 0 and at the very end; twice is two matches.
    EXPECT_EQ(matched(k, "t", kC + kC), (std::vector<std::string>{kC, kC}));
}

TEST(KnownDocuments, TheLongerDocumentWinsAndPartialTextIsNotMatched) {
    KnownDocuments k;
    const std::string longer = kA + " It is a soft, dense, yellow metal.";
    k.add("t", kA);
    k.add("t", longer);
    EXPECT_EQ(matched(k, "t", "x " + longer + " y"), (std::vector<std::string>{longer}));
    EXPECT_EQ(matched(k, "t", "x " + kA + " y"), (std::vector<std::string>{kA}));
    // Overlapping candidates: leftmost first, the one it overlaps is not taken.
    k.add("t", kB);
    const std::string overlap = kB.substr(kB.size() - 40);
    k.add("t", overlap + kC);
    EXPECT_EQ(matched(k, "t", kB + kC), (std::vector<std::string>{kB}));
    // A document whose text appears only in part (cut, or one byte changed) is not matched.
    EXPECT_TRUE(matched(k, "t", kB.substr(0, kB.size() - 1)).empty());
    std::string changed = kC;
    changed[50] = 'X';
    EXPECT_TRUE(matched(k, "t", changed).empty());
    // Too short to index.
    k.add("t", "short");
    EXPECT_TRUE(matched(k, "t", "a short text, shorter than any window").empty());
}

TEST(KnownDocuments, TenantsNeverSeeEachOthersDocuments) {
    KnownDocuments k;
    k.add("alice", kA);
    EXPECT_EQ(matched(k, "alice", kA).size(), 1u);
    EXPECT_TRUE(matched(k, "bob", kA).empty());
    EXPECT_EQ(k.num_documents("bob"), 0);
}

TEST(KnownDocuments, MemoryStaysWithinTheBoundAndTheLargestTenantLosesItsOldest) {
    KnownDocuments::Limits limits;
    limits.max_documents = 1000;
    limits.max_bytes = 1 << 20;
    KnownDocuments k(limits);
    k.add("small", kA);
    int64_t peak = 0;
    for (int i = 0; i < 10000; ++i) {
        k.add("flood", "document number " + std::to_string(i) + " of the flood, long enough to index");
        peak = std::max(peak, k.num_bytes());
        ASSERT_LE(k.num_documents(), limits.max_documents);
    }
    EXPECT_LE(peak, limits.max_bytes);
    EXPECT_EQ(k.num_documents("small"), 1);  // never evicted by another tenant's flood
    EXPECT_EQ(k.num_documents("flood"), limits.max_documents - 1);
    EXPECT_TRUE(matched(k, "flood", "document number 0 of the flood, long enough to index").empty());
    EXPECT_EQ(matched(k, "flood", "document number 9999 of the flood, long enough to index").size(), 1u);
    // The byte bound.
    KnownDocuments::Limits tight;
    tight.max_bytes = 4096;
    KnownDocuments b(tight);
    for (int i = 0; i < 1000; ++i) b.add("t", std::string(200, 'a') + std::to_string(i));
    EXPECT_LE(b.num_bytes(), tight.max_bytes);
    EXPECT_GT(b.num_documents(), 0);
}

TEST(KnownDocuments, OneStartWindowHoldsABoundedNumberOfDocuments) {
    KnownDocuments k;
    const std::string start(KnownDocuments::kWindowBytes, 's');
    for (int i = 0; i < 100; ++i) k.add("t", start + std::to_string(i) + " tail text");
    EXPECT_EQ(k.num_documents("t"), int64_t(KnownDocuments::kMaxPerWindow));
    EXPECT_EQ(matched(k, "t", start + "99 tail text").size(), 1u);  // the newest are kept
    EXPECT_TRUE(matched(k, "t", start + "0 tail text").empty());
}

// Fairness is by owner, the API key: a key that mints a salt per request (700 salts, a document
// each; the flood) evicts only its own documents, never another key's 40, whether the
// document bound or the byte bound is reached. The salts stay isolated for lookup.
TEST(KnownDocuments, AKeyMintingSaltsEvictsOnlyItsOwnDocuments) {
    auto doc = [](const std::string& who, int i) {
        return who + " registered passage number " + std::to_string(i) + ", long enough to index.";
    };
    for (const bool by_count : {true, false}) {
        KnownDocuments::Limits limits;
        limits.max_documents = by_count ? 100 : 1 << 20;
        limits.max_bytes = by_count ? 1 << 30 : 128 << 10;
        KnownDocuments k(limits);
        const std::string a = engine::salted_tenant("key-a", "");
        for (int i = 0; i < 40; ++i) k.add(a, doc("A", i));
        for (int i = 0; i < 700; ++i) k.add(engine::salted_tenant("key-b", "salt-" + std::to_string(i)), doc("B", i));
        SCOPED_TRACE(by_count ? "document bound" : "byte bound");
        EXPECT_LE(k.num_documents(), limits.max_documents);
        EXPECT_LE(k.num_bytes(), limits.max_bytes);
        EXPECT_EQ(k.num_documents(a), 40);
        size_t found = 0;
        for (int i = 0; i < 40; ++i) found += matched(k, a, "x " + doc("A", i) + " y").size();
        EXPECT_EQ(found, 40u);
        // B lost its least recent salts' documents, kept its newest, each under its own salt.
        const std::string newest = engine::salted_tenant("key-b", "salt-699");
        EXPECT_EQ(matched(k, newest, doc("B", 699)).size(), 1u);
        EXPECT_TRUE(matched(k, engine::salted_tenant("key-b", "salt-698"), doc("B", 699)).empty());
        EXPECT_EQ(k.num_documents(engine::salted_tenant("key-b", "salt-0")), 0);
        EXPECT_LT(k.num_tenants(), 700);  // an evicted salt's tenant goes with its document
    }
}

// Each tenant's fixed tables (its maps, bitmap and name) are accounted, so 1,000 salts of one
// document each cost their owner more than 1,000 documents under one salt, and the byte bound
// bounds the tenants too. Tenants never outnumber documents; the bytes return to zero with them.
TEST(KnownDocuments, EachTenantsTablesAreAccounted) {
    auto doc = [](int i) { return "passage number " + std::to_string(i) + " of the corpus, long enough."; };
    KnownDocuments one, salted;
    for (int i = 0; i < 1000; ++i) {
        one.add("key-a", doc(i));
        salted.add(engine::salted_tenant("key-a", std::to_string(i)), doc(i));
    }
    EXPECT_EQ(one.num_documents(), salted.num_documents());
    EXPECT_EQ(salted.num_tenants(), 1000);
    EXPECT_GE(salted.num_bytes() - one.num_bytes(), 999 * 512);  // >= 512 bytes per extra tenant
    EXPECT_EQ(salted.owner_bytes("key-a"), salted.num_bytes());  // every salt is the key's
    // The byte bound counts the tables: 2,000 salts under 256 KiB keep far fewer than 2,000.
    KnownDocuments::Limits limits;
    limits.max_bytes = 256 << 10;
    KnownDocuments bounded(limits);
    for (int i = 0; i < 2000; ++i) bounded.add(engine::salted_tenant("key-a", std::to_string(i)), doc(i));
    EXPECT_LE(bounded.num_bytes(), limits.max_bytes);
    EXPECT_LE(bounded.num_tenants(), limits.max_bytes / 512);
    EXPECT_LE(bounded.num_tenants(), bounded.num_documents());
    // A one-document limit leaves one tenant: each add drops the last one's tables.
    KnownDocuments::Limits single;
    single.max_documents = 1;
    KnownDocuments k(single);
    for (int i = 0; i < 100; ++i) k.add(engine::salted_tenant("key-a", std::to_string(i)), doc(i));
    EXPECT_EQ(k.num_tenants(), 1);
    KnownDocuments::Limits none;
    none.max_bytes = 100;  // less than any document with its tenant: nothing is kept
    KnownDocuments empty(none);
    empty.add("t", doc(0));
    EXPECT_EQ(empty.num_documents(), 0);
    EXPECT_EQ(empty.num_tenants(), 0);
    EXPECT_EQ(empty.num_bytes(), 0);
}

// Adding a document is O(log owners) + O(kMaxPerWindow) whatever the index holds (it runs under
// the lock every request with documents takes): a full start window finds its least recent by
// stamp among its 16 (never by walking the tenant's age list), and the owner holding the most is
// ranked (never found by scanning every tenant). Counts operations; the wall time is only a
// generous backstop (the walk was ~20,000 x 20,000 steps here).
TEST(KnownDocuments, AddingCostsBoundedWorkWhateverTheIndexHolds) {
    KnownDocuments::Limits limits;
    limits.max_documents = 30000;
    KnownDocuments k(limits);
    for (int i = 0; i < 20000; ++i) k.add("t", "an older document, number " + std::to_string(i) + " of many");
    const std::string start(KnownDocuments::kWindowBytes, 's');
    const auto begin = std::chrono::steady_clock::now();
    KnownAddStats before = k.add_stats();
    for (int i = 0; i < 20000; ++i) k.add("t", start + std::to_string(i) + " shares its start window");
    KnownAddStats s = k.add_stats();
    EXPECT_EQ(s.adds - before.adds, 20000u);
    EXPECT_EQ(k.num_documents("t"), 20000 + int64_t(KnownDocuments::kMaxPerWindow));
    EXPECT_LE(s.documents_examined - before.documents_examined, 20000u * KnownDocuments::kMaxPerWindow);
    // Many owners at the bound: each eviction compares a constant number of them.
    for (int i = 0; i < 20000; ++i)
        k.add("key-" + std::to_string(i), "a document of owner number " + std::to_string(i) + ", to index");
    before = s;
    s = k.add_stats();
    EXPECT_EQ(k.num_documents(), limits.max_documents);
    EXPECT_GE(s.evictions - before.evictions, 10000u);
    EXPECT_LE(s.owners_examined - before.owners_examined, s.evictions - before.evictions);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    EXPECT_LT(seconds, 20.0);
}

// 16 MiB of near-matches: every window is a hit, every candidate's whole-text hash fails (its
// last byte differs), so nothing is compared byte for byte: operations stay a small constant per
// byte, never the document length per byte.
TEST(KnownDocuments, AnAdversarialMessageCostsLinearOperations) {
    KnownDocuments k;
    for (size_t len : {1000u, 4000u, 65536u}) k.add("t", std::string(len, 'a') + "b");
    const std::string text(16u << 20, 'a');
    KnownScanStats s;
    EXPECT_TRUE(k.find("t", text, &s).empty());
    const uint64_t n = text.size();
    EXPECT_EQ(s.positions, n - KnownDocuments::kWindowBytes + 1);
    EXPECT_EQ(s.window_hits, s.positions);
    EXPECT_LE(s.candidates, 3 * n);
    EXPECT_EQ(s.bytes_compared, 0u);  // a byte-for-byte check per position would be ~70,000 x n
    EXPECT_LE(s.bytes_hashed, n);     // each byte's prefix hash at most once
    // The same with every position a true match: byte comparisons cover each byte once.
    KnownDocuments m;
    m.add("t", std::string(1000, 'a'));
    KnownScanStats t;
    EXPECT_EQ(m.find("t", text, &t).size(), n / 1000);
    EXPECT_LE(t.bytes_compared, n);
    EXPECT_LE(t.bytes_hashed, n);
    EXPECT_LE(t.positions, n / 1000 + 1000);
}

TEST(FindKnownDocuments, TextAroundTheDocumentsStaysWhereItWas) {
    KnownDocuments k;
    for (const auto& d : {kA, kB}) k.add("t", d);
    DocumentsFrom from;
    from.known = true;
    MessageDocuments found;
    const std::string user = "Use these.\n\n[1] " + kB + "\n\n[2] " + kA + "\n\nQuestion: which is Au?";
    ASSERT_TRUE(find_known_documents(k, "t", from, {"system", "user"}, {"Be brief.", user}, 8, found).ok());
    EXPECT_EQ(found.message, 1);
    EXPECT_EQ(found.before, "Use these.\n\n[1] ");
    ASSERT_EQ(found.documents.size(), 3u);
    EXPECT_EQ(found.documents[0].text, kB);
    EXPECT_TRUE(found.documents[1].raw);
    EXPECT_EQ(found.documents[1].text, "[2] ");
    EXPECT_EQ(found.documents[2].text, kA);
    EXPECT_EQ(found.after, "Question: which is Au?");
    // Nothing known in the user message: the system message (auto).
    MessageDocuments sys;
    ASSERT_TRUE(find_known_documents(k, "t", from, {"system", "user"}, {"Context: " + kA, "Q?"}, 8, sys).ok());
    EXPECT_EQ(sys.message, 0);
    EXPECT_EQ(sys.before, "Context: ");
    // Beside a delimiter's documents: its heading and question are searched.
    MessageDocuments mixed;
    mixed.message = 0;
    mixed.before = kA + " ";
    mixed.documents = {{"new passage", "", false}};
    mixed.after = "\n\n" + kB + " Q?";
    ASSERT_TRUE(find_known_documents(k, "t", from, {"user"}, {""}, 8, mixed).ok());
    ASSERT_EQ(mixed.documents.size(), 3u);
    EXPECT_EQ(mixed.before, "");
    EXPECT_EQ(mixed.documents[0].text, kA);
    EXPECT_EQ(mixed.documents[1].text, "new passage");
    EXPECT_EQ(mixed.documents[2].text, kB);
    EXPECT_EQ(mixed.after, "Q?");
    // The document limit counts them.
    MessageDocuments many;
    EXPECT_FALSE(find_known_documents(k, "t", from, {"user"}, {user}, 2, many).ok());
}

}  // namespace
}  // namespace lazyattn::server
