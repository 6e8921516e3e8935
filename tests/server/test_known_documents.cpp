// KnownDocuments: the per-tenant index of documents the server has seen, and the layout
// documents_from known makes of a message around them. Counts operations, never time.
#include "server/known_documents.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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
