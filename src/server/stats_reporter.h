// StatsReporter: while the server is busy, one log line every interval (10 s, as vLLM's) with
// what an operator watches: prompt and generation throughput over the interval, requests running
// and waiting, KV cache usage and the document hit ratio. Silent while idle.
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/serving_engine.h"
#include "server/metrics.h"

namespace lazyattn::server {

class StatsReporter {
public:
    StatsReporter(const engine::ServingEngine& engine, const Metrics& metrics, double interval_s);
    ~StatsReporter();
    StatsReporter(const StatsReporter&) = delete;
    StatsReporter& operator=(const StatsReporter&) = delete;

private:
    void run();

    const engine::ServingEngine& engine_;
    const Metrics& metrics_;
    const double interval_s_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace lazyattn::server
