// Documents inside chat messages (server/message_documents.h): the delimiter (literal and bounded
// PCRE2), which chunks and parts become documents, and the layout RequestBuilder gives them,
// which must equal the `documents` field's for the same passages.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/loading/loaded_model.h"
#include "engine/request/rag_prompt.h"
#include "server/message_documents.h"
#include "server/openai_request.h"
#include "server/request_builder.h"
#include "server_units_fixture.h"
#include "synthetic_model_fixture.h"

namespace lazyattn::server {
namespace {

using json = nlohmann::json;
using Ranges = std::vector<std::pair<size_t, size_t>>;

std::shared_ptr<const Delimiter> delimiter(const std::string& spec) {
    auto d = Delimiter::compile(spec);
    EXPECT_TRUE(d.ok()) << spec << ": " << d.status().to_string();
    return d.ok() ? *d : nullptr;
}

// Every match with a fresh budget of the default size.
Expected<Ranges> find_all(const std::shared_ptr<const Delimiter>& d, const std::string& text) {
    MatchBudget budget;
    return d->find_all(text, budget);
}

TEST(Delimiter, LiteralAndPatternFindEveryMatchLeftToRight) {
    EXPECT_EQ(*find_all(delimiter("\n\n"), "a\n\nb\n\n\nc"), (Ranges{{1, 3}, {4, 6}}));
    EXPECT_EQ(*find_all(delimiter("regex:\\n\\n *"), "x\n\n    y\n\nz"), (Ranges{{1, 7}, {8, 10}}));
    EXPECT_TRUE(find_all(delimiter("@@"), "no match here")->empty());
    // UTF-8 around the match: offsets are bytes.
    EXPECT_EQ(*find_all(delimiter("regex:—"), "é—ü"), (Ranges{{2, 5}}));
}

TEST(Delimiter, BadSpecsAreRefusedWhenCompiled) {
    for (const std::string spec : {"", "regex:", "regex:((", "regex:x*", "regex:(?=a)|b?", "regex:\\C"}) {
        auto d = Delimiter::compile(spec);
        EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << spec;
    }
    EXPECT_FALSE(Delimiter::compile(std::string(Delimiter::kMaxBytes + 1, 'x')).ok());
    EXPECT_TRUE(Delimiter::compile(std::string(Delimiter::kMaxBytes, 'x')).ok());
}

TEST(Delimiter, ACatastrophicPatternFailsFastInsteadOfSpinning) {
    // Unbounded, this is exponential in the run of a's; the step limit refuses it instead (no
    // timing is asserted: the error can only come from PCRE2's limits).
    auto d = delimiter("regex:(a+)+$");
    auto found = find_all(d, std::string(20000, 'a') + "b");
    ASSERT_FALSE(found.ok());
    EXPECT_NE(found.status().message().find("too expensive"), std::string::npos);
}

// PCRE2's match limit restarts at every start position: runs of 16 a's stay under it at each one,
// so this 544 KB message cost ~100 s of CPU. One budget for every attempt stops it within the
// budget's steps (counted, not timed).
TEST(Delimiter, OneBudgetCoversEveryStartPositionOfACatastrophicPattern) {
    std::string text;
    for (int i = 0; i < 32000; ++i) text += std::string(16, 'a') + "!";
    MatchBudget budget;
    auto found = delimiter("regex:(a+)+$")->find_all(text, budget);
    ASSERT_FALSE(found.ok());
    EXPECT_EQ(found.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(found.status().message().find("too expensive"), std::string::npos);
    EXPECT_EQ(budget.steps_left, 0u);
}

TEST(Delimiter, TheBudgetIsSharedByEveryCallOfARequest) {
    auto d = delimiter("regex:(a+)+$");
    const std::string run = std::string(12, 'a') + "!";  // ~10^4 steps an attempt
    MatchBudget budget;
    budget.steps_left = 200000;
    ASSERT_TRUE(d->find_all(run, budget).ok());
    const uint64_t one_call = 200000 - budget.steps_left;
    EXPECT_GT(one_call, 1000u);
    while (budget.steps_left >= one_call) ASSERT_TRUE(d->find_all(run, budget).ok());
    EXPECT_FALSE(d->find_all(run, budget).ok());  // what is left does not cover another
}

TEST(Delimiter, ADepartedClientStopsTheMatch) {
    std::string text;
    for (int i = 0; i < 32000; ++i) text += std::string(16, 'a') + "!";
    MatchBudget budget;
    int polls = 0;
    budget.cancelled = [&polls] { return ++polls == 3; };
    auto found = delimiter("regex:(a+)+$")->find_all(text, budget);
    EXPECT_EQ(found.status().code(), StatusCode::kCancelled);
    EXPECT_EQ(polls, 3);
    EXPECT_EQ(MatchBudget::kDefaultSteps - budget.steps_left, 3 * MatchBudget::kPollSteps);
}

// The budget must not refuse real delimiters over the largest message a server accepts: a
// pattern with a leading literal, one starting with a class, and a line-anchored one, over
// ~660 KB of prose with a passage every ~1 KB.
TEST(Delimiter, RealPatternsOverTheLargestMessageStayWellWithinTheBudget) {
    std::string text;
    for (int i = 0; text.size() < 660000; ++i) {
        text += "Document " + std::to_string(i) + ": ";
        for (int w = 0; w < 150; ++w) text += "word" + std::to_string(w % 7) + " ";
        text += "\n\n  ";
    }
    for (const std::string spec : {"regex:\\n\\n *", "regex:\\s*\\n\\n\\s*", "regex:(?m)^ *Document \\d+:"}) {
        MatchBudget budget;
        auto found = delimiter(spec)->find_all(text, budget);
        ASSERT_TRUE(found.ok()) << spec << ": " << found.status().to_string();
        EXPECT_GT(found->size(), 500u) << spec;
        EXPECT_GT(budget.steps_left, MatchBudget::kDefaultSteps / 2) << spec;
    }
}

TEST(Delimiter, AZeroLengthMatchInContextIsRefused) {
    auto d = delimiter("regex:(?<=a)(?=b)|zz");  // cannot match "" alone, but does between a and b
    EXPECT_FALSE(find_all(d, "ab").ok());
}

TEST(Delimiter, CommandLineEscapes) {
    EXPECT_EQ(*unescape_delimiter("\\n\\n"), "\n\n");
    EXPECT_EQ(*unescape_delimiter("a\\tb\\\\c\\r"), "a\tb\\c\r");
    EXPECT_FALSE(unescape_delimiter("\\q").ok());
}

Expected<MessageDocuments> find_documents(const DocumentsFrom& from, const std::vector<std::string>& roles,
                                          const std::vector<std::string>& content,
                                          const std::vector<std::vector<ContentPart>>& parts, int32_t max_documents) {
    MatchBudget budget;
    return find_message_documents(from, roles, content, parts, max_documents, budget);
}

DocumentsFrom from_delimiter(const std::string& spec, DocumentsFrom::Message m = DocumentsFrom::Message::kAuto) {
    DocumentsFrom f;
    f.source = DocumentsSource::kDelimiter;
    f.delimiter = delimiter(spec);
    f.message = m;
    return f;
}

std::vector<std::string> texts(const MessageDocuments& found) {
    std::vector<std::string> out;
    for (const auto& d : found.documents) out.push_back(d.text);
    return out;
}

TEST(FindMessageDocuments, TheLastUserMessageKeepsItsLastChunkAsTheQuestion) {
    const std::vector<std::string> roles = {"system", "user"};
    const std::vector<std::string> content = {"Be brief.", "Context:\n\n    P1\n\n    P2\n\nQuestion: Q?"};
    auto found = find_documents(from_delimiter("regex:\\n\\n *"), roles, content, {{}, {}}, 8);
    ASSERT_TRUE(found.ok()) << found.status().to_string();
    EXPECT_EQ(found->message, 1);
    EXPECT_EQ(found->before, "Context:\n\n    ");
    EXPECT_EQ(texts(*found), (std::vector<std::string>{"P1", "P2"}));
    EXPECT_EQ(found->after, "\n\nQuestion: Q?");
}

TEST(FindMessageDocuments, AutoFallsBackToTheSystemMessageWhereEveryChunkAfterTheFirstIsADocument) {
    const std::vector<std::string> roles = {"system", "user"};
    const std::vector<std::string> content = {"Use the context:\n\nP1\n\n\n\nP2", "Who?"};
    auto found = find_documents(from_delimiter("\n\n"), roles, content, {{}, {}}, 8);
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(found->message, 0);
    EXPECT_EQ(found->before, "Use the context:\n\n");
    EXPECT_EQ(texts(*found), (std::vector<std::string>{"P1", "P2"}));  // the empty chunk is skipped
    EXPECT_EQ(found->after, "");
    // Asked for the last user message only: none there.
    auto none = find_documents(from_delimiter("\n\n", DocumentsFrom::Message::kLastUser), roles, content, {{}, {}}, 8);
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->documents.empty());
}

// The first passage is a document: a message that begins with its passages (LangChain with a
// prompt starting "{context}") caches the first one too; a heading or an instruction before them
// (LlamaIndex's "Context information is below.", Haystack's "Context:") stays text before.
TEST(FindMessageDocuments, AFirstChunkIsADocumentUnlessItIsAHeading) {
    const std::string p1 =
        "The Eiffel Tower was completed in 1889 as the entrance arch to the World's Fair and is 330 metres tall.";
    const std::string p2 = "Mount Everest is the highest mountain above sea level, on the border of Nepal and China.";
    const std::string sep = "\n\n~~~\n\n";
    auto found = find_documents(from_delimiter(sep), {"user"}, {p1 + sep + p2 + sep + "Question: how tall?"}, {{}}, 8);
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(found->before, "");
    EXPECT_EQ(texts(*found), (std::vector<std::string>{p1, p2}));
    EXPECT_EQ(found->after, sep + "Question: how tall?");
    // LlamaIndex's default text-QA template: a one-line heading before the dashed line.
    const std::string llama = "Context information is below.\n---------------------\n" + p1 + "\n\n" + p2 +
                              "\n---------------------\nGiven the context information, answer the query.";
    found = find_documents(from_delimiter("regex:\\n\\n *|\\n-{21}\\n"), {"user"}, {llama}, {{}}, 8);
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(found->before, "Context information is below.\n---------------------\n");
    EXPECT_EQ(texts(*found), (std::vector<std::string>{p1, p2}));
    // A multi-line instruction ending with a colon is a heading however long.
    const std::string instruction = std::string(200, 'x') + "\nContext:";
    found = find_documents(from_delimiter("\n\n"), {"user"}, {instruction + "\n\n" + p1 + "\n\nQ?"}, {{}}, 8);
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(found->before, instruction + "\n\n");
    EXPECT_EQ(texts(*found), (std::vector<std::string>{p1}));
    // A short first passage on one line reads as a heading: it stays text before (uncached).
    found = find_documents(from_delimiter("\n\n"), {"user"}, {"Paris is in France.\n\n" + p1 + "\n\nQ?"}, {{}}, 8);
    ASSERT_TRUE(found.ok());
    EXPECT_EQ(texts(*found), (std::vector<std::string>{p1}));
}

TEST(FindMessageDocuments, MoreDocumentsThanTheLimitIsRefusedNamingIt) {
    auto found = find_documents(from_delimiter("|"), {"user"}, {"x|a|b|c|q"}, {{}}, 2);
    ASSERT_FALSE(found.ok());
    EXPECT_NE(found.status().message().find("at most 2"), std::string::npos) << found.status().message();
    EXPECT_TRUE(find_documents(from_delimiter("|"), {"user"}, {"x|a|b|q"}, {{}}, 2).ok());
}

TEST(FindMessageDocuments, PartsButTheLastAreDocumentsAndIdsPassThrough) {
    DocumentsFrom f;
    f.source = DocumentsSource::kParts;
    const std::vector<std::vector<ContentPart>> parts = {{{"P1", ""}, {"", "doc-7"}, {"  ", ""}, {"Q? ", ""}}};
    // The content as rendered: the parts joined by newlines (append_text_part).
    auto found = find_documents(f, {"user"}, {"P1\n\n  \nQ? "}, parts, 8);
    ASSERT_TRUE(found.ok());
    ASSERT_EQ(found->documents.size(), 2u);  // the blank part is skipped
    EXPECT_EQ(found->documents[0].text, "P1");
    EXPECT_EQ(found->documents[1].id, "doc-7");
    EXPECT_EQ(found->before, "");
    EXPECT_EQ(found->after, "Q? ");
    // A template that trims the content trims the question's end too.
    EXPECT_EQ(find_documents(f, {"user"}, {"P1\n\n  \nQ?"}, parts, 8)->after, "Q?");
    // The last part cannot be a document by id (it is the text after them).
    EXPECT_FALSE(find_documents(f, {"user"}, {"P1"}, {{{"P1", ""}, {"", "doc-7"}}}, 8).ok());
    // One part is no documents; an index past the end is refused.
    EXPECT_TRUE(find_documents(f, {"user"}, {"Q?"}, {{{"Q?", ""}}}, 8)->documents.empty());
    f.message = DocumentsFrom::Message::kIndex;
    f.index = 3;
    EXPECT_FALSE(find_documents(f, {"user"}, {"Q?"}, {{}}, 8).ok());
}

class MessageDocumentsLayout : public ServerUnitsModel {
protected:
    RequestBuilder builder(DocumentsFrom from = {}, DocumentLookup lookup = {}) const {
        return RequestBuilder(*model_->tokenizer, chat_, 512, 4096, std::move(lookup), {}, std::move(from), 16);
    }
    static GenerationRequest parse(const json& body) {
        GenerationRequest g;
        auto e = parse_generation_request(body, true, g);
        EXPECT_FALSE(e) << (e ? e->message : "");
        return g;
    }
    const tokenizer::Tokenizer& tok() const { return *model_->tokenizer; }
};

json text_part(const std::string& t) { return {{"type", "text"}, {"text", t}}; }

TEST_F(MessageDocumentsLayout, PartsGiveExactlyTheDocumentsFieldsLayout) {
    auto parts = parse(
        {{"messages", {{{"role", "user"}, {"content", {text_part("P one"), text_part("P two"), text_part("Who?")}}}}},
         {"documents_from", "parts"}});
    auto fields = parse({{"messages", {{{"role", "user"}, {"content", "Who?"}}}}, {"documents", {"P one", "P two"}}});
    auto a = builder().build(parts, ""), b = builder().build(fields, "");
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(a->segments, b->segments);
    EXPECT_EQ(a->tail, b->tail);
    EXPECT_EQ(a->num_document_tokens(), b->num_document_tokens());
    EXPECT_GT(a->num_document_tokens(), 0);
    // Without documents_from (request or server) the parts are one message, as before.
    parts.documents_source.reset();
    auto plain = builder().build(parts, "");
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(plain->num_document_tokens(), 0);
    // The server's setting applies where the request says nothing.
    DocumentsFrom server;
    server.source = DocumentsSource::kParts;
    EXPECT_EQ(builder(server).build(parts, "")->segments, b->segments);
}

TEST_F(MessageDocumentsLayout, ADelimitedSystemMessageIsSplitInPlaceAndReorderingKeepsTheSegments) {
    auto request = [&](const std::string& p1, const std::string& p2) {
        return parse({{"messages",
                       {{{"role", "system"}, {"content", "Use the context.\n\n" + p1 + "\n\n" + p2}},
                        {{"role", "user"}, {"content", "Who?"}}}},
                      {"documents_from", {{"source", "delimiter"}, {"message", "system"}, {"delimiter", "\n\n"}}}});
    };
    auto a = builder().build(request("alpha text", "beta text"), "");
    auto b = builder().build(request("beta text", "alpha text"), "");
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    ASSERT_TRUE(b.ok());
    ASSERT_EQ(a->segments.size(), 3u);
    ASSERT_TRUE(a->first_segment_is_preamble);
    EXPECT_EQ(a->segments[0], b->segments[0]);
    EXPECT_EQ(a->segments[1], b->segments[2]);
    EXPECT_EQ(a->segments[2], b->segments[1]);
    EXPECT_EQ(a->tail, b->tail);
    // Each document is laid out as a `documents` entry is.
    EXPECT_EQ(a->segments[1], tok().encode(engine::format_document("", "alpha text"), false, false));
    // The preamble is what the template renders up to the documents; the tail the rest.
    const std::vector<tokenizer::ChatMessage> msgs = {{"system", "Use the context.\n\nalpha text\n\nbeta text"},
                                                      {"user", "Who?"}};
    const std::string rendered = *chat_.apply(msgs, true);
    const std::string head = tok().decode(a->segments[0], true), tail = tok().decode(a->tail, true);
    EXPECT_EQ(head, rendered.substr(0, rendered.find("alpha text")));
    EXPECT_EQ(tail, rendered.substr(rendered.find("beta text") + std::string("beta text").size()));
}

TEST_F(MessageDocumentsLayout, PartsByIdResolveInTheTenantAndBadCombinationsAreRefused) {
    const std::vector<int32_t> cached = {5, 6, 7};
    auto lookup = [&](const std::string& tenant, const std::string& id) -> std::optional<std::vector<int32_t>> {
        if (tenant == "t" && id == "doc-7") return cached;
        return std::nullopt;
    };
    json by_id = {{"type", "text"}, {"id", "doc-7"}};
    auto g = parse(
        {{"messages", {{{"role", "user"}, {"content", {by_id, text_part("Who?")}}}}}, {"documents_from", "parts"}});
    auto got = builder({}, lookup).build(g, "t");
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(got->segments.back(), cached);
    EXPECT_EQ(builder({}, lookup).build(g, "other").status().code(), StatusCode::kNotFound);
    // A part by id where documents_from does not read it.
    g.documents_source.reset();
    EXPECT_EQ(builder({}, lookup).build(g, "t").status().code(), StatusCode::kInvalidArgument);
    // Documents both ways.
    auto both = parse({{"messages", {{{"role", "user"}, {"content", {text_part("P"), text_part("Q")}}}}},
                       {"documents_from", "parts"},
                       {"documents", {"D"}}});
    EXPECT_EQ(builder().build(both, "").status().code(), StatusCode::kInvalidArgument);
    // The delimiter source with no delimiter anywhere; the documents limit on `documents` too.
    auto no_delim = parse({{"messages", {{{"role", "user"}, {"content", "Q"}}}}, {"documents_from", "delimiter"}});
    EXPECT_EQ(builder().build(no_delim, "").status().code(), StatusCode::kInvalidArgument);
    auto many = parse(
        {{"messages", {{{"role", "user"}, {"content", "Q"}}}}, {"documents", json(std::vector<std::string>(17, "d"))}});
    auto refused = builder().build(many, "");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("at most 16"), std::string::npos);
}

TEST_F(MessageDocumentsLayout, ADelimiterThatNeverOccursLeavesThePromptAsSent) {
    auto g = parse({{"messages", {{{"role", "user"}, {"content", "Who?"}}}}, {"document_delimiter", "@@@"}});
    auto plain = parse({{"messages", {{{"role", "user"}, {"content", "Who?"}}}}});
    auto a = builder().build(g, ""), b = builder().build(plain, "");
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(a->segments, b->segments);
    EXPECT_EQ(a->tail, b->tail);
}

TEST(DocumentsFromField, MalformedValuesNameTheField) {
    struct Case {
        json value;
        std::string param;
    } cases[] = {
        {{{"documents_from", 3}}, "documents_from"},
        {{{"documents_from", "everything"}}, "documents_from"},
        {{{"documents_from", {{"source", "parts"}, {"extra", 1}}}}, "documents_from"},
        {{{"documents_from", {{"message", -1}}}}, "documents_from.message"},
        {{{"documents_from", {{"message", "assistant"}}}}, "documents_from.message"},
        {{{"documents_from", {{"delimiter", "regex:(("}}}}, "documents_from.delimiter"},
        {{{"document_delimiter", "regex:a*"}}, "document_delimiter"},
        {{{"document_delimiter", 5}}, "document_delimiter"},
    };
    for (const Case& c : cases) {
        json body = c.value;
        body["messages"] = {{{"role", "user"}, {"content", "q"}}};
        GenerationRequest g;
        auto e = parse_generation_request(body, true, g);
        ASSERT_TRUE(e) << body.dump();
        EXPECT_EQ(e->http_status, 400);
        EXPECT_EQ(e->param, c.param) << body.dump();
    }
}

}  // namespace
}  // namespace lazyattn::server
