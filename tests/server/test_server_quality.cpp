// --quality over a real socket: `serve --quality balanced` (the default) reads documents plain
// until they recur, then makes their neighbour-conditioned copies in the background (idle server, no
// request waiting for them), lists each copy with its neighbours in /v1/documents, counts it in
// /metrics, and serves it to the next request. A request's own document_reuse still wins.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using json = nlohmann::json;

const json kDocs = {
    {{"title", "Gold"}, {"text", "Gold is a chemical element with the symbol Au and atomic number 79."}},
    {{"title", "Silver"}, {"text", "Silver is a chemical element with the symbol Ag and atomic number 47."}},
    {{"title", "Copper"}, {"text", "Copper is a chemical element with the symbol Cu and atomic number 29."}},
};

// The background work runs on the engine thread after the requests: waited for as an event
// (bounded), never timed.
bool wait_metric(const ServerProcess& s, const std::string& name, double at_least) {
    for (int i = 0; i < 400; ++i) {
        if (metric_value(metrics_text(s), name) >= at_least) return true;
        usleep(50 * 1000);
    }
    return false;
}

// What balanced does with documents that recur: copies made in the background after two
// sightings, listed with their neighbours, then served.
void expect_recurring_documents_get_conditioned_copies(const ServerProcess& s) {
    const std::string body = completion_body(false, {{"documents", kDocs}});
    for (int i = 0; i < 2; ++i) {  // --condition-after's default: two sightings
        auto r = curl("POST", s.url("/v1/completions"), body);
        ASSERT_EQ(r.status, 200) << r.body;
    }
    ASSERT_TRUE(wait_metric(s, "lazyattn_background_done_total", 3)) << metrics_text(s);
    std::string m = metrics_text(s);
    EXPECT_EQ(metric_value(m, "lazyattn_conditioned_lookups_total"), 6) << m;
    EXPECT_EQ(metric_value(m, "lazyattn_conditioned_served_total"), 0) << m;
    EXPECT_GT(metric_value(m, "lazyattn_background_rows_total"), 0) << m;
    EXPECT_EQ(metric_value(m, "lazyattn_background_queued"), 0) << m;

    // Every document lists its copy, conditioned on one of the others.
    json list;
    for (int i = 0; i < 100; ++i) {  // the list is republished after the engine's step
        list = parse_or_null(curl("GET", s.url("/v1/documents")).body);
        int with_copy = 0;
        for (const json& d : list["data"]) with_copy += d["conditioned_copies"].size() == 1 ? 1 : 0;
        if (with_copy == 3) break;
        usleep(50 * 1000);
    }
    ASSERT_EQ(list["data"].size(), 3u) << list;
    std::set<std::string> ids;
    for (const json& d : list["data"]) ids.insert(d["id"].get<std::string>());
    for (const json& d : list["data"]) {
        ASSERT_EQ(d["conditioned_copies"].size(), 1u) << d;
        const json& c = d["conditioned_copies"][0];
        EXPECT_EQ(c["neighbours"], 1) << c;
        ASSERT_EQ(c["neighbour_ids"].size(), 1u) << c;
        const std::string n = c["neighbour_ids"][0].get<std::string>();
        EXPECT_TRUE(ids.count(n) == 1 && n != d["id"].get<std::string>()) << c;
        EXPECT_GT(c["prefix_tokens"].get<int>(), 0) << c;
        EXPECT_EQ(c["cached"], true) << c;
    }

    // The third request reads the three copies: no document token computed.
    const double job_tokens = metric_value(m, "lazyattn_segment_job_tokens_total");
    auto r = curl("POST", s.url("/v1/completions"), body);
    ASSERT_EQ(r.status, 200) << r.body;
    m = metrics_text(s);
    EXPECT_EQ(metric_value(m, "lazyattn_conditioned_served_total"), 3) << m;
    EXPECT_EQ(metric_value(m, "lazyattn_segment_job_tokens_total"), job_tokens) << m;
    // A request that says plain reads the plain copies still.
    auto plain = curl("POST", s.url("/v1/completions"),
                      completion_body(false, {{"documents", kDocs}, {"document_reuse", "plain"}}));
    ASSERT_EQ(plain.status, 200) << plain.body;
    EXPECT_EQ(metric_value(metrics_text(s), "lazyattn_conditioned_lookups_total"), 9);
}

TEST(ServerQuality, BalancedMakesConditionedCopiesOfRecurringDocumentsAndServesThem) {
    ServerProcess s(server_args({"--quality", "balanced"}));
    ASSERT_TRUE(s.started()) << s.log();
    expect_recurring_documents_get_conditioned_copies(s);
}

// The default chosen on issue 63's evidence: a server started with no preset runs balanced.
TEST(ServerQuality, TheDefaultPresetIsBalanced) {
    ServerProcess s(server_args(), /*product_defaults=*/true);
    ASSERT_TRUE(s.started()) << s.log();
    expect_recurring_documents_get_conditioned_copies(s);
}

TEST(ServerQuality, FastMakesNoCopiesAndABadPresetStopsTheStart) {
    ServerProcess s(server_args({"--quality", "fast"}));
    ASSERT_TRUE(s.started()) << s.log();
    const std::string body = completion_body(false, {{"documents", kDocs}});
    for (int i = 0; i < 3; ++i) ASSERT_EQ(curl("POST", s.url("/v1/completions"), body).status, 200);
    const std::string m = metrics_text(s);
    EXPECT_EQ(metric_value(m, "lazyattn_conditioned_lookups_total"), 0) << m;
    EXPECT_EQ(metric_value(m, "lazyattn_background_done_total"), 0) << m;
    ServerProcess bad(server_args({"--quality", "best"}));
    EXPECT_FALSE(bad.started());
}

}  // namespace
}  // namespace lazyattn::testing
