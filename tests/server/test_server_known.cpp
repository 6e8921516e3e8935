// documents_from known over real sockets: `lazyattn serve` finds the documents it has seen
// (pinned with /v1/documents or sent in `documents`) inside flat prompts, per tenant and bounded;
// and delimiter mode caches a message's first passage. Each check compares the usage a flat
// prompt reports with the same passages sent in `documents`.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using json = nlohmann::json;

const std::vector<std::string> kPassages = {
    "Gold is a chemical element with the symbol Au and atomic number 79, a bright, dense, soft metal.",
    "Silver is a chemical element with the symbol Ag and atomic number 47, the best conductor of heat.",
    "Copper is a chemical element with the symbol Cu and atomic number 29, used in wires since 1820.",
    "Iron is a chemical element with the symbol Fe and atomic number 26, the most common on Earth.",
    "Tin is a chemical element with the symbol Sn and atomic number 50, alloyed with copper as bronze.",
    "Lead is a chemical element with the symbol Pb and atomic number 82, dense and soft and toxic.",
};

struct Usage {
    int cached = 0;
    int documents = 0;
};

// `api_key`: sent as a bearer token ("" none).
Usage chat(const ServerProcess& s, const std::string& user, json extra = json::object(), int expect_status = 200,
           const std::string& api_key = "") {
    json body = {{"max_tokens", 2}, {"temperature", 0}, {"messages", {{{"role", "user"}, {"content", user}}}}};
    body.update(extra);
    std::vector<std::string> headers;
    if (!api_key.empty()) headers = {"-H", "'Authorization: Bearer " + api_key + "'"};
    auto r = curl("POST", s.url("/v1/chat/completions"), body.dump(), headers);
    EXPECT_EQ(r.status, expect_status) << r.body;
    auto j = parse_or_null(r.body);
    if (r.status != 200 || !j.is_object()) return {};
    const json& d = j["usage"]["prompt_tokens_details"];
    return {d["cached_tokens"].get<int>(), d["document_tokens"].get<int>()};
}

// The document tokens of the same passages sent in `documents` (the layout a found one copies).
int documents_tokens(const ServerProcess& s, const std::vector<std::string>& docs, const std::string& salt = "") {
    json extra = {{"documents", docs}};
    if (!salt.empty()) extra["cache_salt"] = salt;
    return chat(s, "Question: which metal?", extra).documents;
}

void pin(const ServerProcess& s, const std::vector<std::string>& docs, const std::string& salt = "") {
    json body = {{"documents", docs}};
    if (!salt.empty()) body["cache_salt"] = salt;
    auto r = curl("POST", s.url("/v1/documents"), body.dump());
    ASSERT_EQ(r.status, 200) << r.body;
}

TEST(ServerKnownDocuments, FoundAtAnyOffsetWithAnySeparatorAsDocumentsEntries) {
    ServerProcess s(server_args({"--documents-from", "known"}));
    ASSERT_TRUE(s.started()) << s.log();
    pin(s, kPassages);
    const int expected = documents_tokens(s, {kPassages[1], kPassages[0]});
    ASSERT_GT(expected, 0);
    for (const std::string sep : {"", " ", "\n\n"}) {
        const std::string user = "Answer from these." + sep + kPassages[1] + sep + kPassages[0] + sep + "Which is Au?";
        const Usage u = chat(s, user);
        EXPECT_EQ(u.documents, expected) << "separator '" << sep << "'";
        EXPECT_GE(u.cached, u.documents * 95 / 100) << "separator '" << sep << "'";
    }
    // A numbered heading between them stays, as a small segment of its own.
    const Usage numbered = chat(s, "Sources:\n[1] " + kPassages[1] + "\n[2] " + kPassages[0] + "\nWhich is Au?");
    EXPECT_GT(numbered.documents, expected);
    // A request with `documents` keeps them: a known passage quoted in its question stays text.
    const Usage quoted = chat(s, "Is this right? " + kPassages[1], {{"documents", {kPassages[0]}}});
    EXPECT_EQ(quoted.documents, documents_tokens(s, {kPassages[0]}));
    // Partial text (one byte short) is not a known document; a plain prompt.
    EXPECT_EQ(chat(s, "x " + kPassages[2].substr(0, kPassages[2].size() - 1) + " Which?").documents, 0);
}

TEST(ServerKnownDocuments, TheLongerKnownDocumentWins) {
    ServerProcess s(server_args({"--documents-from", "known"}));
    ASSERT_TRUE(s.started()) << s.log();
    const std::string longer = kPassages[0] + " It has been used for coins since antiquity.";
    pin(s, {kPassages[0], longer});
    const int expected = documents_tokens(s, {longer});
    EXPECT_EQ(chat(s, "Read: " + longer + " Which is Au?").documents, expected);
    EXPECT_EQ(chat(s, "Read: " + kPassages[0] + " Which is Au?").documents, documents_tokens(s, {kPassages[0]}));
}

TEST(ServerKnownDocuments, AnotherTenantsDocumentIsNeverMatched) {
    ServerProcess s(server_args({"--documents-from", "known"}));
    ASSERT_TRUE(s.started()) << s.log();
    pin(s, {kPassages[3]}, "alice");
    const std::string user = "Context: " + kPassages[3] + " Which is Fe?";
    EXPECT_EQ(chat(s, user, {{"cache_salt", "bob"}}).documents, 0);
    EXPECT_EQ(chat(s, user).documents, 0);  // no salt: a tenant of its own
    EXPECT_GT(chat(s, user, {{"cache_salt", "alice"}}).documents, 0);
}

TEST(ServerKnownDocuments, TheIndexIsBoundedOldestFirst) {
    ServerProcess s(server_args({"--documents-from", "known", "--known-documents-max", "4"}));
    ASSERT_TRUE(s.started()) << s.log();
    pin(s, kPassages);  // six: the first two are evicted
    EXPECT_EQ(chat(s, "Context: " + kPassages[0] + " Q?").documents, 0);
    EXPECT_EQ(chat(s, "Context: " + kPassages[1] + " Q?").documents, 0);
    EXPECT_GT(chat(s, "Context: " + kPassages[5] + " Q?").documents, 0);
}

// `api_key`: the bearer token /metrics needs when the server has keys.
double gauge(const ServerProcess& s, const std::string& name, const std::string& api_key = "") {
    const std::string text =
        api_key.empty() ? metrics_text(s)
                        : curl("GET", s.url("/metrics"), "", {"-H", "'Authorization: Bearer " + api_key + "'"}).body;
    const size_t at = text.find("\n" + name + "{");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(text.find("} ", at) + 2));
}

// 10,000 documents (100 requests of 100) against bounds of 500 documents and 64 KiB: the
// index's size stays at its bound, the newest are found, the oldest evicted.
TEST(ServerKnownDocuments, MemoryStaysFlatOverTenThousandDocuments) {
    ServerProcess s(server_args(
        {"--documents-from", "known", "--known-documents-max", "500", "--known-documents-max-bytes", "65536"}));
    ASSERT_TRUE(s.started()) << s.log();
    auto doc = [](int i) { return "Registered passage number " + std::to_string(i) + " of the long flood, in full."; };
    double peak_bytes = 0;
    for (int batch = 0; batch < 100; ++batch) {
        json docs = json::array();
        for (int i = 0; i < 100; ++i) docs.push_back(doc(batch * 100 + i));
        chat(s, "Q?", {{"documents", docs}, {"max_tokens", 1}});
        if (batch % 10 == 9) {
            EXPECT_LE(gauge(s, "lazyattn_known_documents"), 500);
            peak_bytes = std::max(peak_bytes, gauge(s, "lazyattn_known_document_bytes"));
        }
    }
    EXPECT_GT(peak_bytes, 0);
    EXPECT_LE(peak_bytes, 65536);
    EXPECT_EQ(chat(s, "Read: " + doc(0) + " Q?").documents, 0);
    EXPECT_GT(chat(s, "Read: " + doc(9999) + " Q?").documents, 0);
}

// The bounds are shared by API key, not by (key, cache_salt), and only a request that is taken
// makes its documents known (the issue: one key's 700 refused requests under 700 salts evicted 39
// of another key's 40 documents). Key B, a fresh salt per request, sends requests refused for the
// context (each with a new document: none becomes known) and 150 taken ones with a new document
// each, past the bound of 100: key A's 40 documents are all still found, B lost its own.
TEST(ServerKnownDocuments, AKeyMintingSaltsEvictsNoneOfAnotherKeysDocuments) {
    ServerProcess s(
        server_args({"--documents-from", "known", "--api-key", "alpha-key,beta-key", "--known-documents-max", "100"}));
    ASSERT_TRUE(s.started()) << s.log();
    auto doc = [](const std::string& who, int i) {
        return who + "'s passage number " + std::to_string(i) + ", about the metals and their symbols.";
    };
    for (int batch = 0; batch < 4; ++batch) {
        json docs = json::array();
        for (int i = 0; i < 10; ++i) docs.push_back(doc("Alpha", batch * 10 + i));
        chat(s, "Q?", {{"documents", docs}}, 200, "alpha-key");
    }
    ASSERT_EQ(gauge(s, "lazyattn_known_documents", "alpha-key"), 40);
    std::string too_long;
    for (int i = 0; i < 3000; ++i) too_long += "lorem ipsum ";
    for (int i = 0; i < 20; ++i) {
        const json extra = {{"documents", {doc("Refused", i)}}, {"cache_salt", "refused-" + std::to_string(i)}};
        chat(s, too_long, extra, 400, "beta-key");
    }
    EXPECT_EQ(gauge(s, "lazyattn_known_documents", "alpha-key"), 40) << "a refused request made its document known";
    for (int i = 0; i < 150; ++i) {
        chat(s, "Q?", {{"documents", {doc("Beta", i)}}, {"cache_salt", "salt-" + std::to_string(i)}}, 200, "beta-key");
    }
    EXPECT_EQ(gauge(s, "lazyattn_known_documents", "alpha-key"), 100);
    int found = 0;
    for (int i = 0; i < 40; ++i)
        found += chat(s, "Read: " + doc("Alpha", i) + " Q?", json::object(), 200, "alpha-key").documents > 0;
    EXPECT_EQ(found, 40);
    EXPECT_GT(chat(s, "Read: " + doc("Beta", 149) + " Q?", {{"cache_salt", "salt-149"}}, 200, "beta-key").documents, 0);
    EXPECT_EQ(chat(s, "Read: " + doc("Beta", 0) + " Q?", {{"cache_salt", "salt-0"}}, 200, "beta-key").documents, 0);
}

// Documents were noted as known before the response budget and the engine's own checks: a
// request refused there made its documents known all the same. Only a request the engine takes does.
TEST(ServerKnownDocuments, ARequestRefusedAfterItsDocumentsWereReadMakesNothingKnown) {
    ServerProcess s(server_args({"--documents-from", "known"}));
    ASSERT_TRUE(s.started()) << s.log();
    const json too_large = {{"documents", {kPassages[0]}},
                            {"n", 16},
                            {"max_tokens", 3000},
                            {"logprobs", true},
                            {"top_logprobs", 20}};  // past the response budget: 400 response_too_large
    chat(s, "Q?", too_large, 400);
    const json bad_reuse = {{"documents", {kPassages[1]}},
                            {"document_reuse", "anchor+neighbours=1"}};  // the engine's check
    chat(s, "Q?", bad_reuse, 400);
    EXPECT_EQ(chat(s, "Context: " + kPassages[0] + " Q?").documents, 0);
    EXPECT_EQ(chat(s, "Context: " + kPassages[1] + " Q?").documents, 0);
    chat(s, "Q?", {{"documents", {kPassages[0]}}});  // taken: known from now on
    EXPECT_GT(chat(s, "Context: " + kPassages[0] + " Q?").documents, 0);
}

TEST(ServerKnownDocuments, KnownIsOptInPerRequestAndServedPlainWhenNothingIsKnown) {
    ServerProcess s(server_args());
    ASSERT_TRUE(s.started()) << s.log();
    const std::string user = "Context: " + kPassages[2] + " " + kPassages[4] + " Q?";
    EXPECT_EQ(chat(s, user, {{"documents_from", "known"}}).documents, 0);  // nothing known yet: 200, plain
    // Seen once in `documents`, then found in flat prompts that ask for it, reordered too.
    ASSERT_GT(documents_tokens(s, {kPassages[2], kPassages[4]}), 0);
    EXPECT_EQ(chat(s, user).documents, 0);  // not asked: the default is none
    const Usage u = chat(s, "Context: " + kPassages[4] + " " + kPassages[2] + " Q?", {{"documents_from", "known"}});
    EXPECT_EQ(u.documents, documents_tokens(s, {kPassages[4], kPassages[2]}));
    EXPECT_GE(u.cached, u.documents * 95 / 100);
    chat(s, user, {{"documents_from", "known+parts+x"}}, 400);
    chat(s, user, {{"documents_from", {{"known", "yes"}}}}, 400);
}

// precompute --corpus's file, given to serve --known-documents: known from the first request
// (untitled documents; a titled one is not, its segment holds the title).
TEST(ServerKnownDocuments, ACorpusFileIsKnownFromTheStart) {
    const std::string path = ::testing::TempDir() + "known_corpus_" + std::to_string(::getpid()) + ".jsonl";
    {
        std::ofstream out(path);
        out << json{{"text", kPassages[0]}}.dump() << "\n\n"
            << json{{"documents", {{{"text", kPassages[1]}}, {{"text", kPassages[2]}, {"title", "Copper"}}}}}.dump()
            << "\n";
    }
    ServerProcess s(server_args({"--documents-from", "known", "--known-documents", path}));
    ASSERT_TRUE(s.started()) << s.log();
    const Usage u = chat(s, "Use: " + kPassages[1] + " " + kPassages[0] + " " + kPassages[2] + " Q?");
    EXPECT_EQ(u.documents, documents_tokens(s, {kPassages[1], kPassages[0]}));
    std::remove(path.c_str());
}

// A flat client in the shape of LMCache's rag-qa-quality: the documents were seen once, the
// retrieval comes back reordered: >= 95% of the document tokens are served from the cache.
TEST(ServerKnownDocuments, AReorderedFlatPromptIsServedFromTheCache) {
    ServerProcess s(server_args({"--documents-from", "known"}));
    ASSERT_TRUE(s.started()) << s.log();
    ASSERT_GT(documents_tokens(s, kPassages), 0);
    std::string flat = "You are given some passages. Answer the question.\n\n";
    for (size_t i = kPassages.size(); i-- > 0;) flat += kPassages[i] + (i % 2 ? " " : "\n\n");
    const Usage u = chat(s, flat + "Question: which is Pb?");
    std::vector<std::string> reversed(kPassages.rbegin(), kPassages.rend());
    EXPECT_EQ(u.documents, documents_tokens(s, reversed));
    EXPECT_GE(u.cached, u.documents * 95 / 100) << u.cached << " of " << u.documents;
}

// LangChain's create_stuff_documents_chain with ("user", "{context}" + SEP + "Question: {q}"):
// the message begins with its first passage, which is a cached document too.
TEST(ServerKnownDocuments, ADelimitedMessageThatBeginsWithAPassageCachesIt) {
    const std::string sep = "\n\n###\n\n";
    ServerProcess s(server_args({"--document-delimiter", "\\n\\n###\\n\\n"}));
    ASSERT_TRUE(s.started()) << s.log();
    auto stuffed = [&](const std::vector<std::string>& docs) {
        std::string c;
        for (const auto& d : docs) c += d + sep;
        return c + "Question: which is Pb?";
    };
    const Usage first = chat(s, stuffed(kPassages));
    EXPECT_EQ(first.documents, documents_tokens(s, kPassages));
    std::vector<std::string> reversed(kPassages.rbegin(), kPassages.rend());
    const Usage again = chat(s, stuffed(reversed));
    EXPECT_EQ(again.documents, first.documents);
    EXPECT_GE(again.cached, again.documents * 95 / 100) << again.cached << " of " << again.documents;
}

}  // namespace
}  // namespace lazyattn::testing
