// Scale-out, shown over real sockets: `lazyattn serve` replicas sharing one real redis-server
// (started here on a free loopback port), and a replica restarted on yesterday's --kv-store
// directory. A document's KV depends only on the model, the KV type and its tokens, so a replica
// that never computed a document serves it from the shared tier with no document prefill and the
// same greedy output.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "redis_server.h"
#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

using json = nlohmann::json;

const json kStoreDocs = {
    {{"title", "Gold"}, {"text", "Gold is a chemical element with the symbol Au and atomic number 79."}},
    {{"title", "Silver"}, {"text", "Silver is a chemical element with the symbol Ag and atomic number 47."}},
    {{"title", "Copper"}, {"text", "Copper is a chemical element with the symbol Cu and atomic number 29."}},
};

std::string rag_body(const json& docs) { return completion_body(true, {{"documents", docs}, {"ignore_eos", true}}, 8); }

json post_chat(const ServerProcess& s, const json& docs) {
    auto r = curl("POST", s.url("/v1/chat/completions"), rag_body(docs));
    EXPECT_EQ(r.status, 200) << r.body;
    return parse_or_null(r.body);
}

std::string reply_text(const json& j) { return j["choices"][0]["message"]["content"].get<std::string>(); }

// Waits until the replica's store writer has written `n` entries to its tier 0 (writes are
// asynchronous: off the inference thread).
bool wait_store_writes(const ServerProcess& s, const std::string& tier, double n, double timeout_s = 20) {
    const std::string name = "lazyattn_kv_store_writes_total{tier=\"" + tier + "\",position=\"0\"}";
    for (int i = 0; i < int(timeout_s * 20); ++i) {
        if (metric_value(metrics_text(s), name) >= n) return true;
        usleep(50 * 1000);
    }
    return false;
}

std::string fresh_dir(const std::string& name) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("lazyattn-" + name + "-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

TEST(ServerStore, ReplicaBServesDocumentsOnlyReplicaAComputedThroughOneRedis) {
    store::testing::RedisServer redis;
    if (!redis.running()) GTEST_SKIP() << "redis-server is not installed (scripts/install_deps.sh installs it)";
    ServerProcess a(server_args({"--kv-store", redis.url()}));
    ServerProcess b(server_args({"--kv-store", redis.url()}));
    ASSERT_TRUE(a.started()) << a.log();
    ASSERT_TRUE(b.started()) << b.log();

    const json from_a = post_chat(a, kStoreDocs);
    // The chat preamble and the three documents: four segments, each written once.
    ASSERT_TRUE(wait_store_writes(a, "redis", 4)) << metrics_text(a);
    const std::string ma = metrics_text(a);
    EXPECT_GT(metric_value(ma, "lazyattn_segment_job_tokens_total"), 0) << ma;

    // B has never seen these documents: it loads them from Redis and computes none.
    json reordered = kStoreDocs;
    const json from_b = post_chat(b, kStoreDocs);
    EXPECT_EQ(reply_text(from_b), reply_text(from_a));
    std::string mb = metrics_text(b);
    EXPECT_EQ(metric_value(mb, "lazyattn_segment_job_tokens_total"), 0) << mb;
    EXPECT_EQ(metric_value(mb, "lazyattn_kv_store_hits_total{tier=\"redis\",position=\"0\"}"), 4) << mb;
    EXPECT_EQ(metric_value(mb, "lazyattn_kv_store_errors_total{tier=\"redis\",position=\"0\"}"), 0) << mb;
    // cached_tokens counts what came from the store: everything but the question tail.
    const int prompt = from_b["usage"]["prompt_tokens"],
              cached = from_b["usage"]["prompt_tokens_details"]["cached_tokens"];
    EXPECT_EQ(prompt, from_a["usage"]["prompt_tokens"].get<int>());
    EXPECT_GT(cached, prompt / 2) << from_b;

    // In another order, B reuses the same entries (now in its own RAM pool): still no document prefill.
    std::swap(reordered[0], reordered[2]);
    const json again = post_chat(b, reordered);
    ASSERT_TRUE(again.contains("choices")) << again;
    mb = metrics_text(b);
    EXPECT_EQ(metric_value(mb, "lazyattn_segment_job_tokens_total"), 0) << mb;
}

TEST(ServerStore, ServingContinuesWhenRedisGoesDownAndUsesItAgainWhenBack) {
    store::testing::RedisServer redis;
    if (!redis.running()) GTEST_SKIP() << "redis-server is not installed (scripts/install_deps.sh installs it)";
    ServerProcess a(server_args({"--kv-store", redis.url()}));
    ASSERT_TRUE(a.started()) << a.log();
    redis.kill();
    // Redis is gone: requests are computed and answered; the failures are counted, not fatal.
    const json down = post_chat(a, kStoreDocs);
    ASSERT_TRUE(down.contains("choices")) << down;
    for (int i = 0;
         i < 200 && metric_value(metrics_text(a), "lazyattn_kv_store_errors_total{tier=\"redis\",position=\"0\"}") <= 0;
         ++i) {
        usleep(50 * 1000);
    }
    EXPECT_GT(metric_value(metrics_text(a), "lazyattn_kv_store_errors_total{tier=\"redis\",position=\"0\"}"), 0);
    // Back on the same port: a new document is written through again.
    ASSERT_TRUE(redis.start());
    const json fresh_doc = {{{"text", "Platinum is a chemical element with the symbol Pt and atomic number 78."}}};
    bool written = false;
    for (int attempt = 0; attempt < 3 && !written; ++attempt) {
        const json up =
            post_chat(a, attempt == 0 ? fresh_doc : json::array({{{"text", "Iridium " + std::to_string(attempt)}}}));
        ASSERT_TRUE(up.contains("choices")) << up;
        written = wait_store_writes(a, "redis", 1, 5);
    }
    EXPECT_TRUE(written) << metrics_text(a) << a.log();
    // One warning per outage, not one per request.
    const std::string log = a.log();
    size_t warnings = 0;
    for (size_t at = log.find("tier failing"); at != std::string::npos; at = log.find("tier failing", at + 1))
        ++warnings;
    EXPECT_LE(warnings, 2u) << log;
}

TEST(ServerStore, ARestartedReplicaServesYesterdaysDocumentsFromDisk) {
    const std::string dir = fresh_dir("serve-store");
    std::string before;
    {
        ServerProcess a(server_args({"--kv-store", dir}));
        ASSERT_TRUE(a.started()) << a.log();
        before = reply_text(post_chat(a, kStoreDocs));
        ASSERT_TRUE(wait_store_writes(a, "disk", 4)) << metrics_text(a);
        a.send_signal(SIGTERM);
        EXPECT_EQ(a.wait_exit(20), 0) << a.log();
    }
    ServerProcess restarted(server_args({"--kv-store", dir}));
    ASSERT_TRUE(restarted.started()) << restarted.log();
    EXPECT_EQ(reply_text(post_chat(restarted, kStoreDocs)), before);
    const std::string m = metrics_text(restarted);
    EXPECT_EQ(metric_value(m, "lazyattn_segment_job_tokens_total"), 0) << m;
    EXPECT_EQ(metric_value(m, "lazyattn_kv_store_hits_total{tier=\"disk\",position=\"0\"}"), 4) << m;
    std::filesystem::remove_all(dir);
}

// Two model files alike but for rope.freq_base (100000 and 100000.4, which the model's printed
// description rounds alike): a server of the second, on the first's --kv-store directory, reads
// none of its entries (another model's KV would answer wrongly) and computes every document.
TEST(ServerStore, AModelDifferingOnlyInRopeBaseNeverReadsAnothersEntries) {
    const std::string dir = fresh_dir("fingerprint-store");
    synthetic::SyntheticModelOptions o;
    o.rope_freq_base = 100000.0f;
    const std::string model_a = synthetic_model_path(o, "server-rope-100000");
    o.rope_freq_base = 100000.4f;
    const std::string model_b = synthetic_model_path(o, "server-rope-100000.4");
    const auto args = [&](const std::string& model) {
        return std::vector<std::string>{"--model", model, "--kv-cache-mb", "16", "--threads", "1", "--kv-store", dir};
    };
    {
        ServerProcess a(args(model_a));
        ASSERT_TRUE(a.started()) << a.log();
        post_chat(a, kStoreDocs);
        ASSERT_TRUE(wait_store_writes(a, "disk", 4)) << metrics_text(a);
        a.send_signal(SIGTERM);
        EXPECT_EQ(a.wait_exit(20), 0) << a.log();
    }
    ServerProcess b(args(model_b));
    ASSERT_TRUE(b.started()) << b.log();
    ASSERT_TRUE(post_chat(b, kStoreDocs).contains("choices"));
    std::string m = metrics_text(b);
    EXPECT_EQ(metric_value(m, "lazyattn_kv_store_hits_total{tier=\"disk\",position=\"0\"}"), 0) << m;
    EXPECT_GT(metric_value(m, "lazyattn_segment_job_tokens_total"), 0) << m;
    // Model A's entries are still there, and are A's.
    ServerProcess again(args(model_a));
    ASSERT_TRUE(again.started()) << again.log();
    ASSERT_TRUE(post_chat(again, kStoreDocs).contains("choices"));
    m = metrics_text(again);
    EXPECT_EQ(metric_value(m, "lazyattn_kv_store_hits_total{tier=\"disk\",position=\"0\"}"), 4) << m;
    std::filesystem::remove_all(dir);
}

// `lazyattn precompute` of kStoreDocs (one document a line) into DIR/kv with `args`; its JSON
// summary goes to DIR/precompute.json. The exit status.
int precompute_store_docs(const std::string& dir, const std::string& args) {
    {
        std::ofstream corpus(dir + "/corpus.jsonl");
        for (const auto& d : kStoreDocs) corpus << json({{"documents", {d}}}).dump() << "\n";
    }
    const std::string cmd = std::string(LAZYATTN_CLI_PATH) + " precompute --model " + server_model_path() +
                            " --threads 1 " + args + " --corpus " + dir + "/corpus.jsonl --kv-store " + dir + "/kv > " +
                            dir + "/precompute.json 2>/dev/null";
    return std::system(cmd.c_str());
}

// The offline path: `lazyattn precompute` for the clients of one API key, then a server with that
// key serves those documents without computing any of them, and another key's clients (a tenant
// of their own) do not see them.
TEST(ServerStore, PrecomputedDocumentsServeTheirTenantWithoutPrefill) {
    const std::string dir = fresh_dir("precompute-store");
    ASSERT_EQ(precompute_store_docs(dir, "--api-key alpha"), 0);
    {
        std::ofstream keys(dir + "/keys.txt");
        keys << "alpha\nbeta\n";
    }
    ServerProcess s(server_args({"--kv-store", dir + "/kv", "--api-key-file", dir + "/keys.txt"}));
    ASSERT_TRUE(s.started()) << s.log();
    const std::string body = completion_body(false, {{"documents", kStoreDocs}});
    auto a = curl("POST", s.url("/v1/completions"), body, {"-H", "'Authorization: Bearer alpha'"});
    ASSERT_EQ(a.status, 200) << a.body;
    std::string m = curl("GET", s.url("/metrics"), "", {"-H", "'Authorization: Bearer alpha'"}).body;
    EXPECT_EQ(metric_value(m, "lazyattn_segment_job_tokens_total"), 0) << m;
    EXPECT_EQ(metric_value(m, "lazyattn_kv_store_hits_total{tier=\"disk\",position=\"0\"}"), 3) << m;
    auto b = curl("POST", s.url("/v1/completions"), body, {"-H", "'Authorization: Bearer beta'"});
    ASSERT_EQ(b.status, 200) << b.body;
    m = curl("GET", s.url("/metrics"), "", {"-H", "'Authorization: Bearer beta'"}).body;
    EXPECT_GT(metric_value(m, "lazyattn_segment_job_tokens_total"), 0) << m;  // beta computed its own
    EXPECT_EQ(metric_value(m, "lazyattn_kv_store_hits_total{tier=\"disk\",position=\"0\"}"), 3) << m;
    std::filesystem::remove_all(dir);
}

// Neighbour-conditioned copies offline (`precompute --neighbours 1`): a server reads them for
// requests asking for "neighbours=1", with no document computed, while plain requests compute
// (and store) the plain copies, which the conditioned ones never stand in for.
TEST(ServerStore, PrecomputedNeighbourConditionedCopiesServeWithoutPrefill) {
    const std::string dir = fresh_dir("precompute-neighbours");
    ASSERT_EQ(precompute_store_docs(dir, "--neighbours 1"), 0);
    {
        std::ifstream in(dir + "/precompute.json");
        const json summary = json::parse(in);
        EXPECT_EQ(summary["computed"], 3) << summary;
        EXPECT_EQ(summary["neighbours"], 1) << summary;
    }
    ServerProcess s(server_args({"--kv-store", dir + "/kv"}));
    ASSERT_TRUE(s.started()) << s.log();
    json extra = {{"documents", kStoreDocs}, {"document_reuse", "neighbours=1"}};
    auto a = curl("POST", s.url("/v1/completions"), completion_body(false, extra));
    ASSERT_EQ(a.status, 200) << a.body;
    std::string m = curl("GET", s.url("/metrics"), "").body;
    EXPECT_EQ(metric_value(m, "lazyattn_segment_job_tokens_total"), 0) << m;
    EXPECT_EQ(metric_value(m, "lazyattn_kv_store_hits_total{tier=\"disk\",position=\"0\"}"), 3) << m;
    auto b = curl("POST", s.url("/v1/completions"), completion_body(false, {{"documents", kStoreDocs}}));
    ASSERT_EQ(b.status, 200) << b.body;
    m = curl("GET", s.url("/metrics"), "").body;
    EXPECT_GT(metric_value(m, "lazyattn_segment_job_tokens_total"), 0) << m;  // the plain copies
    EXPECT_EQ(metric_value(m, "lazyattn_kv_store_hits_total{tier=\"disk\",position=\"0\"}"), 3) << m;
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lazyattn::testing
