// Neighbour-conditioned documents (DocumentReuse::neighbours) on a tiny random model, fresh random
// tokens each run: the BM25 index ranks, excludes and forgets as documented; a document
// conditioned on one neighbour, read after that neighbour, is exactly causal attention over
// [neighbour][document][question] in lazy, lazy-k and block-attn (its keys stored from position
// 0 and moved by the span rule); the conditioned copy is one per document, reused at any slot,
// and never mixed with the plain copy; requests that cannot take it are refused; nothing leaks,
// also under memory pressure with preemption.
#include <algorithm>

#include "engine/request/tenant.h"
#include "engine/reuse/neighbour_index.h"
#include "engine/sync_engine.h"
#include "random_inputs.h"
#include "reuse_fixture.h"
#include "synthetic_model_fixture.h"

namespace lazyattn::engine {
namespace {

using namespace reuse_testing;

// Tokens from a range of ids no other helper here draws from, so that documents share a token
// only where a test puts one.
class Tokens {
public:
    explicit Tokens(uint64_t salt) : rng_(testing::test_seed() + salt) {}
    std::vector<int32_t> make(int32_t n) {
        const int32_t vocab = tiny_model().model->config().vocab_size;
        EXPECT_LE(next_ + n, vocab) << "a test drew more distinct tokens than the vocabulary has";
        std::vector<int32_t> t(n);
        for (auto& x : t) x = next_++;
        std::shuffle(t.begin(), t.end(), rng_);
        return t;
    }
    std::mt19937_64& rng() { return rng_; }

private:
    std::mt19937_64 rng_;
    int32_t next_ = 3;
};

DocumentReuse neighbours(int32_t k) {
    DocumentReuse r;
    r.neighbours = k;
    return r;
}

// `doc` with some of `from`'s tokens spliced in: it shares them, so BM25 finds `from`.
std::vector<int32_t> sharing(std::vector<int32_t> doc, const std::vector<int32_t>& from, int32_t count) {
    doc.insert(doc.begin() + doc.size() / 2, from.begin(), from.begin() + count);
    return doc;
}

TEST(NeighbourIndex, RanksByBm25ExcludesItselfAndUnrelatedDocuments) {
    NeighbourIndex index;
    const std::vector<int32_t> query = {1, 2, 3, 4, 5, 6, 7, 8};
    const std::vector<int32_t> close = {1, 2, 3, 4, 50, 51};     // four query tokens
    const std::vector<int32_t> closer = {1, 2, 3, 4, 5, 6, 52};  // six
    const std::vector<int32_t> common = {8, 60, 61, 62};         // one, in every document below
    const std::vector<int32_t> unrelated = {70, 71, 72};
    for (const auto* d : {&close, &closer, &common, &unrelated, &query}) index.add("t", *d);
    index.add("t", sharing({80, 81}, {8}, 1));
    const auto near = index.nearest("t", query, 8);
    ASSERT_EQ(near.size(), 4u);  // itself and `unrelated` never
    EXPECT_EQ(*near[0], closer);
    EXPECT_EQ(*near[1], close);
    EXPECT_GT(index.score("t", query, closer), index.score("t", query, close));
    EXPECT_EQ(index.score("t", query, unrelated), 0.0);
    EXPECT_EQ(index.nearest("t", query, 1).size(), 1u);
    // Tenants never see each other's documents.
    EXPECT_TRUE(index.nearest("other", query, 4).empty());
    index.add("other", unrelated);
    EXPECT_TRUE(index.nearest("other", query, 4).empty());
    // Adding again refreshes, it does not duplicate.
    const int32_t n = index.num_documents();
    index.add("t", close);
    EXPECT_EQ(index.num_documents(), n);
}

// In a corpus large enough that the query is cut to its rarest tokens (and tokens found in more
// than 4096 documents are not scanned), a document sharing its rare tokens still wins over
// thousands sharing 150 common ones.
TEST(NeighbourIndex, RareTokensDecideInALargeCorpus) {
    NeighbourIndex index;
    std::vector<int32_t> query;
    for (int32_t t = 0; t < 200; ++t) query.push_back(t);  // 200 distinct tokens
    std::vector<int32_t> common(query.begin(), query.begin() + 150);
    for (int32_t i = 0; i < 5000; ++i) {  // tokens 0-149 end up in more than 4096 documents
        std::vector<int32_t> d = common;
        d.push_back(100000 + i);
        index.add("t", d);
    }
    const std::vector<int32_t> rare = {190, 191, 192, 193, 100};
    index.add("t", rare);
    const auto near = index.nearest("t", query, 1);
    ASSERT_EQ(near.size(), 1u);
    EXPECT_EQ(*near[0], rare);
}

TEST(NeighbourIndex, StaysWithinItsLimitsDroppingTheOldest) {
    NeighbourIndex index({/*max_documents=*/3, /*max_tokens=*/1000});
    std::vector<std::vector<int32_t>> docs;
    for (int32_t i = 0; i < 5; ++i) docs.push_back({100, 200 + i, 300 + i});
    for (const auto& d : docs) index.add("t", d);
    EXPECT_EQ(index.num_documents(), 3);
    EXPECT_EQ(index.num_tokens(), 9);
    const auto near = index.nearest("t", {100}, 8);
    ASSERT_EQ(near.size(), 3u);
    for (const auto* d : near) EXPECT_NE(std::find(docs.begin() + 2, docs.end(), *d), docs.end()) << "an old one kept";
    NeighbourIndex small({100, /*max_tokens=*/7});
    small.add("t", docs[0]);
    small.add("t", docs[1]);
    small.add("t", docs[2]);  // 9 tokens: the oldest goes
    EXPECT_EQ(small.num_documents(), 2);
    EXPECT_LE(small.num_tokens(), 7);
    small.add("t", std::vector<int32_t>(8, 5));  // longer than the whole index: not kept
    EXPECT_EQ(small.num_documents(), 2);
}

// The bound is over every tenant, but one tenant's flood evicts only its own documents: past the
// limit the tenant holding the most loses its oldest, so one at or under its fair share keeps all
// of its documents (here the flood: 34,000 tiny documents from one key, default limits).
TEST(NeighbourIndex, AFloodFromOneTenantEvictsOnlyItsOwnDocuments) {
    NeighbourIndex index;
    const std::vector<std::vector<int32_t>> mine = {{1, 2, 3, 4}, {1, 2, 5, 6}, {7, 8, 3, 9}};
    for (const auto& d : mine) index.add("victim", d);
    for (int32_t i = 0; i < 34000; ++i) index.add("flood", {100000 + i, 200000 + i});
    EXPECT_EQ(index.num_documents(), NeighbourIndex::Limits{}.max_documents);
    EXPECT_EQ(index.num_documents("victim"), 3);
    EXPECT_EQ(index.num_documents("flood"), NeighbourIndex::Limits{}.max_documents - 3);
    EXPECT_EQ(index.nearest("victim", mine[0], 2).size(), 2u);
    // The flood lost its oldest documents and kept its newest.
    EXPECT_EQ(index.score("flood", {100000}, {100000, 200000}), 0.0);
    EXPECT_GT(index.score("flood", {133999}, {133999, 233999}), 0.0);
}

TEST(NeighbourIndex, PastTheLimitTheTenantHoldingTheMostLosesItsOldest) {
    // By documents: A alone may fill the index; B's documents then take A's oldest until the two
    // hold equal shares, and B's further ones only B's own.
    NeighbourIndex index({/*max_documents=*/100, /*max_tokens=*/1 << 20});
    auto doc = [](int32_t tenant, int32_t i) { return std::vector<int32_t>{tenant * 1000 + i, 7}; };
    for (int32_t i = 0; i < 100; ++i) index.add("a", doc(1, i));
    EXPECT_EQ(index.num_documents("a"), 100);
    for (int32_t i = 0; i < 30; ++i) index.add("b", doc(2, i));
    EXPECT_EQ(index.num_documents("a"), 70);
    EXPECT_EQ(index.num_documents("b"), 30);
    EXPECT_EQ(index.score("a", doc(1, 29), doc(1, 29)), 0.0) << "A's oldest went first";
    EXPECT_GT(index.score("a", doc(1, 30), doc(1, 30)), 0.0);
    for (int32_t i = 30; i < 500; ++i) index.add("b", doc(2, i));
    EXPECT_EQ(index.num_documents("a"), 50);
    EXPECT_EQ(index.num_documents("b"), 50);
    EXPECT_GT(index.score("a", doc(1, 50), doc(1, 50)), 0.0);  // A's newest 50
    EXPECT_GT(index.score("b", doc(2, 499), doc(2, 499)), 0.0);
    // A third tenant's first document costs one of the two largest theirs, not its own.
    index.add("c", doc(3, 0));
    EXPECT_EQ(index.num_documents("a") + index.num_documents("b"), 99);
    EXPECT_EQ(index.num_documents("c"), 1);
    // By tokens: a tenant holding few tokens keeps them whatever another adds.
    NeighbourIndex small({/*max_documents=*/1000, /*max_tokens=*/100});
    for (int32_t i = 0; i < 5; ++i) small.add("few", {10 + i, 20 + i, 30 + i, 40 + i});  // 20 tokens
    for (int32_t i = 0; i < 200; ++i) small.add("many", {1000 + i, 2000 + i, 3000 + i});
    EXPECT_EQ(small.num_documents("few"), 5);
    EXPECT_LE(small.num_tokens(), 100);
    EXPECT_EQ(small.num_documents("many"), 26);  // 78 tokens: the most that fit beside the 20
}

// Fairness is by owner, the API key: a key minting a salt per request (700 salts of a document
// each) is one owner, so past the bound it evicts its own least recent documents, never another
// key's 40 (by documents and by tokens); its salts stay isolated for lookup.
TEST(NeighbourIndex, AKeyMintingSaltsEvictsOnlyItsOwnDocuments) {
    for (const bool by_count : {true, false}) {
        SCOPED_TRACE(by_count ? "document bound" : "token bound");
        NeighbourIndex index({/*max_documents=*/by_count ? 100 : 100000, /*max_tokens=*/by_count ? 1 << 20 : 300});
        const std::string a = salted_tenant("key-a", "");
        for (int32_t i = 0; i < 40; ++i) index.add(a, {1000 + i, 7});
        for (int32_t i = 0; i < 700; ++i) index.add(salted_tenant("key-b", std::to_string(i)), {5000 + i, 7});
        EXPECT_EQ(index.num_documents(a), 40);
        EXPECT_LE(index.num_documents(), by_count ? 100 : 150);
        EXPECT_EQ(index.num_documents(salted_tenant("key-b", "0")), 0);  // B's least recent went
        EXPECT_EQ(index.num_documents(salted_tenant("key-b", "699")), 1);
        EXPECT_EQ(index.nearest(a, {1000, 7}, 100).size(), 39u);                        // all of A's others
        EXPECT_EQ(index.score(salted_tenant("key-b", "698"), {5699}, {5699, 7}), 0.0);  // B's salts: apart
    }
}

// A lookup that finds fewer neighbours than asked for encodes the document for its request only:
// that copy is not the K-neighbour copy, so it is never cached under its key nor joined by
// another request; once the corpus has K neighbours the real copy is computed, equal to a fresh
// engine's, and kept.
TEST(NeighbourConditioning, ACopyWithFewerNeighboursThanAskedIsNeitherCachedNorJoined) {
    Tokens tok(5);
    const auto n1 = tok.make(20), n2 = tok.make(20);
    const auto doc = sharing(sharing(tok.make(25), n1, 3), n2, 3);
    const auto preamble = tok.make(6);
    auto req = request_of(preamble, {doc}, tok.make(4), neighbours(2));
    auto e = make_engine(CacheMode::kLazy);
    e->scheduler().index_documents("", std::vector<std::vector<int32_t>>{n1});  // one of two
    ASSERT_TRUE(e->run(req).ok());
    const int64_t jobs = e->scheduler().stats().segment_jobs;
    EXPECT_EQ(jobs, 3);  // the preamble, n1 as the prefix, the document
    ASSERT_TRUE(e->run(req).ok());
    EXPECT_EQ(e->scheduler().stats().segment_jobs, jobs + 1) << "the short copy was cached";
    // Two requests at once, each short: neither joins the other's copy.
    {
        EngineCore s(*tiny_model().model, *tiny_model().tokenizer, config(CacheMode::kLazy));
        s.scheduler().index_documents("", std::vector<std::vector<int32_t>>{n1});
        auto other = request_of(preamble, {doc}, tok.make(5), neighbours(2));
        auto h1 = s.add(req), h2 = s.add(other);
        ASSERT_TRUE(h1.ok() && h2.ok());
        while (s.step()) {
        }
        EXPECT_EQ(s.scheduler().stats().segment_jobs, 4) << "the preamble, the prefix, the document twice";
        EXPECT_EQ((*h1)->wait().token_ids.size(), 6u);
        EXPECT_EQ((*h2)->wait().token_ids.size(), 6u);
        s.scheduler().check_integrity();
        EXPECT_EQ(s.scheduler().kv().kv_cache().num_free(), s.scheduler().kv().kv_cache().pool().num_blocks());
    }
    // The corpus complete: the two-neighbour copy, as a fresh engine with that corpus computes it.
    e->scheduler().index_documents("", std::vector<std::vector<int32_t>>{n2});
    auto got = e->tail_logits(req);
    auto full = make_engine(CacheMode::kLazy);
    full->scheduler().index_documents("", std::vector<std::vector<int32_t>>{n1, n2});
    auto want = full->tail_logits(req);
    ASSERT_TRUE(got.ok() && want.ok());
    testing::expect_close(*got, *want, 1e-5, 1.0, "the copy once the corpus has both neighbours");
    const int64_t before = e->scheduler().stats().segment_jobs;
    ASSERT_TRUE(e->tail_logits(req).ok());
    EXPECT_EQ(e->scheduler().stats().segment_jobs, before) << "the full copy is kept";
    expect_pool_whole(*e);
}

// The neighbour read before the document, as the preamble: the tail then attends to
// [neighbour][document] where the document's KV saw the neighbour first, which is exactly the
// causal prompt (none), whatever the lengths, in every segment mode.
TEST(NeighbourConditioning, ADocumentAfterItsNeighbourIsFullAttention) {
    for (CacheMode mode : {CacheMode::kLazy, CacheMode::kLazyK, CacheMode::kBlockAttn}) {
        Tokens tok(1);  // a fresh engine, so the same ids again
        auto seg = make_engine(mode), none = make_engine(CacheMode::kNone);
        for (auto [a, b] : {std::pair{5, 3}, std::pair{16, 17}, std::pair{23, 40}, std::pair{50, 16}}) {
            const auto neighbour = tok.make(a);
            const auto doc = sharing(tok.make(b), neighbour, 3);
            seg->scheduler().index_documents("", std::vector<std::vector<int32_t>>{neighbour});
            // A neighbour contributes at most as many tokens as the document has, its first ones.
            const std::vector<int32_t> read(neighbour.begin(), neighbour.begin() + std::min(a, b + 3));
            auto req = request_of(read, {doc}, tok.make(7), neighbours(1));
            for (int pass = 0; pass < 2; ++pass) {  // computed, then read from the cache
                auto got = seg->tail_logits(req), want = none->tail_logits(req);
                ASSERT_TRUE(got.ok() && want.ok()) << got.status().to_string() << want.status().to_string();
                testing::expect_close(*got, std::vector<float>(want->end() - got->size(), want->end()), 1e-4, 1.0,
                                      (std::string(cache_mode_name(mode)) + " conditioned vs none").c_str());
            }
            // The plain copy did not see the neighbour: it differs.
            RagRequest plain = req;
            plain.reuse = {};
            auto p = seg->tail_logits(plain), want = none->tail_logits(req);
            EXPECT_GT(testing::max_relative_difference(*p, std::vector<float>(want->end() - p->size(), want->end())),
                      1e-3);
        }
        expect_pool_whole(*seg);
    }
}

TEST(NeighbourConditioning, OneCopyPerDocumentReadAtAnySlotNeverMixedWithThePlainOne) {
    Tokens tok(2);
    const auto neighbour = tok.make(30), other = tok.make(12);
    const auto doc = sharing(tok.make(25), neighbour, 4);
    auto e = make_engine(CacheMode::kLazy);
    e->scheduler().index_documents("", std::vector<std::vector<int32_t>>{neighbour});
    ASSERT_TRUE(e->run(request_of(tok.make(9), {doc}, tok.make(4), neighbours(1))).ok());
    const int64_t jobs = e->scheduler().stats().segment_jobs;
    EXPECT_EQ(jobs, 3);  // the preamble, the neighbour's prefix and the conditioned document
    // Another preamble, another slot, another question: the conditioned copy is a hit, and reads
    // as a fresh engine with the same corpus computes it.
    auto req = request_of(tok.make(9), {other, doc}, tok.make(6), neighbours(1));
    auto cached = e->tail_logits(req);
    EXPECT_EQ(e->scheduler().stats().segment_jobs, jobs + 2);  // the new preamble and `other` only
    auto fresh_engine = make_engine(CacheMode::kLazy);
    fresh_engine->scheduler().index_documents("", std::vector<std::vector<int32_t>>{neighbour});
    auto fresh = fresh_engine->tail_logits(req);
    ASSERT_TRUE(cached.ok() && fresh.ok());
    testing::expect_close(*cached, *fresh, 1e-5, 1.0, "cached vs fresh conditioned document");
    // The plain copy is another entry: computed anew, never the conditioned one.
    RagRequest plain = req;
    plain.reuse = {};
    const int64_t before = e->scheduler().stats().segment_jobs;
    auto p = e->tail_logits(plain);
    EXPECT_EQ(e->scheduler().stats().segment_jobs, before + 2);  // `other` and `doc`, plain
    EXPECT_GT(testing::max_relative_difference(*p, *cached), 1e-3);
    // A document with no neighbour in the corpus is encoded alone (for its request only), so it
    // reads like the plain copy.
    auto alone = request_of(tok.make(5), {tok.make(20)}, tok.make(3), neighbours(2));
    RagRequest alone_plain = alone;
    alone_plain.reuse = {};
    auto x = e->tail_logits(alone), y = e->tail_logits(alone_plain);
    ASSERT_TRUE(x.ok() && y.ok());
    testing::expect_close(*x, *y, 1e-5, 1.0, "a document without neighbours");
    expect_pool_whole(*e);
}

TEST(NeighbourConditioning, SettingsARequestCannotTakeAreRefused) {
    Tokens tok(3);
    auto e = make_engine(CacheMode::kLazy);
    DocumentReuse both = neighbours(2);
    both.anchored = true;
    EXPECT_EQ(e->run(request_of(tok.make(4), {tok.make(5)}, tok.make(3), both)).status().code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(e->run(request_of(tok.make(4), {tok.make(5)}, tok.make(3), neighbours(9))).status().code(),
              StatusCode::kInvalidArgument);
    EXPECT_EQ(e->run(request_of(tok.make(4), {tok.make(5)}, tok.make(3), neighbours(-1))).status().code(),
              StatusCode::kInvalidArgument);
    // The document and its neighbours (here up to its own length) must fit the context.
    const int32_t ctx = e->scheduler().context_length();
    const int32_t n = ctx / 2 + 1;
    auto long_doc = request_of(tok.make(2), {std::vector<int32_t>(n, 5)}, tok.make(1), neighbours(1));
    auto r = e->run(long_doc);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kOutOfRange);
    EXPECT_NE(r.status().message().find("neighbours"), std::string::npos) << r.status().to_string();
    auto parsed = parse_document_reuse("neighbours=3+recompute=15%@query");
    ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
    EXPECT_EQ(parsed->neighbours, 3);
    EXPECT_EQ(parsed->name(), "neighbours=3+recompute=15%@query");
    EXPECT_EQ(*parse_document_reuse(parsed->name()), *parsed);
    for (const char* bad : {"neighbours=", "neighbours=x", "neighbours=9", "neighbours=2+anchor", "neighbours=-2"}) {
        EXPECT_FALSE(parse_document_reuse(bad).ok()) << bad;
    }
    EXPECT_EQ(parse_reuse_variant("lazy:neighbours=2")->reuse.neighbours, 2);
    expect_pool_whole(*e);
}

// Requests conditioning documents on each other (their neighbours are one another, and earlier
// requests' documents), in a pool too small for them together: the prefix jobs run before the
// documents that wait for them, preemption drops and redoes them, and every output equals the
// output of the request alone on an engine that indexed the same corpus.
TEST(NeighbourConditioning, ConditionedRequestsUnderMemoryPressure) {
    Tokens tok(4);
    const auto preamble = tok.make(11);
    std::vector<std::vector<int32_t>> docs;
    for (int i = 0; i < 8; ++i) {
        auto d = tok.make(10 + int32_t(tok.rng()() % 30));
        if (i > 0) d = sharing(d, docs[i - 1], 2);  // a chain of neighbours
        docs.push_back(d);
    }
    std::vector<RagRequest> reqs;
    for (int i = 0; i < 10; ++i) {
        std::vector<std::vector<int32_t>> pick;
        for (int j = 0; j < 3; ++j) pick.push_back(docs[tok.rng()() % docs.size()]);
        DocumentReuse reuse = neighbours(1 + i % 2);
        if (i % 3 == 0) reuse.recompute_tokens = 16;
        reqs.push_back(request_of(preamble, pick, tok.make(3 + int32_t(tok.rng()() % 10)), reuse));
        reqs.back().max_tokens = 20;
    }
    std::vector<std::vector<int32_t>> want;
    {
        auto alone = make_engine(CacheMode::kLazy);
        alone->scheduler().index_documents("", docs);
        for (const auto& r : reqs) want.push_back(alone->run(r)->token_ids);
    }
    EngineConfig c = config(CacheMode::kLazy);
    c.kv_num_blocks = 40;
    EngineCore s(*tiny_model().model, *tiny_model().tokenizer, c);
    s.scheduler().index_documents("", docs);
    std::vector<std::shared_ptr<RequestHandle>> handles;
    for (const auto& r : reqs) handles.push_back(*s.add(r));
    while (s.step()) {
    }
    for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(handles[i]->wait().token_ids, want[i]) << "request " << i;
    std::printf("[conditioned under pressure] %lld preemptions, %lld segment jobs\n",
                (long long)s.scheduler().stats().preemptions, (long long)s.scheduler().stats().segment_jobs);
    s.scheduler().check_integrity();
    EXPECT_EQ(s.scheduler().kv().kv_cache().num_free(), s.scheduler().kv().kv_cache().pool().num_blocks());
}

}  // namespace
}  // namespace lazyattn::engine
