// TokenClock: the gaps between one request's tokens as the HTTP worker hands them on, for the
// inter-token latency histogram (what a streaming client sees, engine batching included).
#pragma once

#include "core/timer.h"
#include "engine/request/request_handle.h"
#include "server/metrics.h"

namespace lazyattn::server {

class TokenClock {
public:
    void on_event(Metrics& metrics, const engine::RequestEvent& e) {
        if (e.kind != engine::RequestEvent::Kind::kToken || e.token_id < 0) return;  // held-back text only
        const double now = now_ms();
        if (last_ms_ >= 0) metrics.observe_inter_token((now - last_ms_) / 1000.0);
        last_ms_ = now;
    }

private:
    double last_ms_ = -1;
};

}  // namespace lazyattn::server
