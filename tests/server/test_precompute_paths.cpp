// One document, one store entry, whichever path computed it: `lazyattn precompute --corpus`,
// POST /v1/documents on `lazyattn serve`, and the C++ call the Python extension's precompute()
// makes (server::pin_document_batch in compute-only mode, ServingEngine::precompute). The three
// share engine::document_tokens and the store key, so a replica fed by any of them hits entries
// written by the others.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "engine/loading/loaded_model.h"
#include "engine/serving_engine.h"
#include "server/document_batch.h"
#include "server/request_builder.h"
#include "server_test_util.h"

namespace lazyattn::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const json kDocuments = {
    {{"title", "Gold"}, {"text", "Gold is a chemical element with the symbol Au and atomic number 79."}},
    {{"text", "Silver is a chemical element with the symbol Ag and atomic number 47."}},
};

std::string fresh_dir(const std::string& name) {
    const fs::path dir = fs::temp_directory_path() / ("lazyattn-" + name + "-" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir.string();
}

// The entry files of a disk store (paths below it), once `n` are there: writes happen on the
// store's writer thread, after the call that computed the documents returned.
std::set<std::string> entry_files(const std::string& dir, size_t n) {
    std::set<std::string> files;
    for (int i = 0; i < 400 && files.size() < n; ++i) {
        if (i > 0) usleep(50 * 1000);
        files.clear();
        std::error_code ec;
        for (const auto& e : fs::recursive_directory_iterator(dir, ec)) {
            if (e.is_regular_file() && e.path().extension() == ".seg") files.insert(fs::relative(e.path(), dir));
        }
    }
    return files;
}

std::set<std::string> by_cli(const std::string& dir) {
    {
        std::ofstream corpus(dir + "/corpus.jsonl");
        for (const auto& d : kDocuments) corpus << d.dump() << "\n";
    }
    const std::string cmd = std::string(LAZYATTN_CLI_PATH) + " precompute --model " + server_model_path() +
                            " --threads 1 --corpus " + dir + "/corpus.jsonl --kv-store " + dir + "/kv > /dev/null 2>&1";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return entry_files(dir + "/kv", kDocuments.size());
}

std::set<std::string> by_http(const std::string& dir) {
    ServerProcess s(server_args({"--kv-store", dir + "/kv"}));
    EXPECT_TRUE(s.started()) << s.log();
    auto r = curl("POST", s.url("/v1/documents"), json({{"documents", kDocuments}}).dump());
    EXPECT_EQ(r.status, 200) << r.body;
    return entry_files(dir + "/kv", kDocuments.size());
}

// What lazyattn.LLM.precompute() runs, without the wheel.
std::set<std::string> by_python_path(const std::string& dir) {
    auto lm = engine::load_model(server_model_path(), 1);
    EXPECT_TRUE(lm.ok()) << lm.status().to_string();
    engine::EngineConfig c;
    c.kv_cache_mb = 16;
    c.kv_stores = {dir + "/kv"};
    auto eng = engine::ServingEngine::create(*lm->model, *lm->tokenizer, c);
    EXPECT_TRUE(eng.ok()) << eng.status().to_string();
    server::RequestBuilder builder(*lm->tokenizer, std::nullopt, (*eng)->context_length(), 16, {});
    std::vector<server::DocumentRef> docs;
    EXPECT_FALSE(server::parse_documents(kDocuments, false, docs).has_value());
    std::vector<engine::DocumentInfo> infos;
    const auto error = server::pin_document_batch(builder, **eng, docs, "", infos, server::PinMode::kComputeOnly);
    EXPECT_FALSE(error.has_value()) << error->message;
    EXPECT_EQ(infos.size(), kDocuments.size());
    for (const auto& info : infos) EXPECT_FALSE(info.pinned);
    return entry_files(dir + "/kv", kDocuments.size());
}

TEST(PrecomputePaths, TheCliHttpAndPythonPathsWriteTheSameStoreEntries) {
    const std::string cli = fresh_dir("paths-cli"), http = fresh_dir("paths-http"), py = fresh_dir("paths-py");
    const std::set<std::string> a = by_cli(cli), b = by_http(http), c = by_python_path(py);
    EXPECT_EQ(a.size(), kDocuments.size());
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, c);
    for (const std::string& d : {cli, http, py}) fs::remove_all(d);
}

}  // namespace
}  // namespace lazyattn::testing
