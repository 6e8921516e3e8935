// The cost of documents_from known's scan (server/known_documents.h): a prompt of --prompt-kb KB
// against a tenant holding --documents known documents of ~--document-bytes bytes, with
// --occurring of them inside the prompt, against a tenant whose documents the prompt does not
// hold, and against a tenant with nothing known. Median of --runs scans; docs/benchmarks.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "server/known_documents.h"

namespace {

std::string words(std::mt19937_64& rng, size_t bytes) {
    static const char* kWords[] = {"the",   "metal",  "river", "of",     "element", "atomic", "number", "and",
                                   "dense", "stable", "ore",   "mined",  "coins",   "bronze", "alloy",  "is",
                                   "a",     "heat",   "wire",  "symbol", "since",   "used",   "in",     "soft"};
    std::string s;
    while (s.size() < bytes) {
        s += kWords[rng() % (sizeof kWords / sizeof *kWords)];
        s += ' ';
        if (rng() % 9 == 0) {
            s += std::to_string(rng() % 100000);
            s += ' ';
        }
    }
    return s;
}

double median_ms(const lazyattn::server::KnownDocuments& k, const std::string& tenant, const std::string& prompt,
                 int runs, size_t& found) {
    std::vector<double> ms;
    for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        found = k.find(tenant, prompt).size();
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    size_t num_documents = 10000, document_bytes = 400, prompt_kb = 100, occurring = 20;
    int runs = 51;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        const size_t v = std::strtoull(argv[i + 1], nullptr, 10);
        if (flag == "--documents")
            num_documents = v;
        else if (flag == "--document-bytes")
            document_bytes = v;
        else if (flag == "--prompt-kb")
            prompt_kb = v;
        else if (flag == "--occurring")
            occurring = v;
        else if (flag == "--runs")
            runs = int(v);
    }
    std::mt19937_64 rng(7);
    lazyattn::server::KnownDocuments k;
    std::vector<std::string> docs;
    for (size_t i = 0; i < num_documents; ++i) {
        docs.push_back(words(rng, document_bytes));
        k.add("rag", docs.back());
        k.add("other", words(rng, document_bytes));
    }
    std::string prompt = "Answer the question from the passages below.\n\n";
    const size_t target = prompt_kb * 1024;
    for (size_t i = 0; i < occurring && prompt.size() < target; ++i) prompt += docs[rng() % docs.size()] + "\n\n";
    prompt += words(rng, target > prompt.size() ? target - prompt.size() : 0);
    size_t found = 0;
    std::printf("prompt %zu bytes, %zu known documents of ~%zu bytes (index: %lld documents, %.1f MiB)\n",
                prompt.size(), num_documents, document_bytes, static_cast<long long>(k.num_documents()),
                double(k.num_bytes()) / (1 << 20));
    (void)median_ms(k, "rag", prompt, runs, found);  // warm-up
    double ms = median_ms(k, "rag", prompt, runs, found);
    std::printf("  %zu of them in the prompt:   %.3f ms median (%zu found, %.2f GB/s)\n", occurring, ms, found,
                double(prompt.size()) / ms / 1e6);
    ms = median_ms(k, "other", prompt, runs, found);
    std::printf("  none of them in the prompt: %.3f ms median (%zu found, %.2f GB/s)\n", ms, found,
                double(prompt.size()) / ms / 1e6);
    lazyattn::server::KnownScanStats st;
    (void)k.find(std::getenv("BENCH_TENANT") ? std::getenv("BENCH_TENANT") : "other", prompt, &st);
    std::printf("  (%llu windows, %llu bitmap hits, %llu key hits, %llu candidates, %llu bytes compared)\n",
                static_cast<unsigned long long>(st.positions), static_cast<unsigned long long>(st.bitmap_hits),
                static_cast<unsigned long long>(st.window_hits), static_cast<unsigned long long>(st.candidates),
                static_cast<unsigned long long>(st.bytes_compared));
    ms = median_ms(k, "nobody", prompt, runs, found);
    std::printf("  nothing known (no index):   %.3f ms median\n", ms);
    return 0;
}
