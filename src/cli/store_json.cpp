#include "cli/store_json.h"

namespace lazyattn::cli {

nlohmann::json store_stats_json(const store::StoreStats& s) {
    nlohmann::json tiers = nlohmann::json::array();
    for (const store::TierStats& t : s.tiers) {
        tiers.push_back({{"tier", t.name},
                         {"where", t.where},
                         {"hits", t.hits},
                         {"misses", t.misses},
                         {"bytes_read", t.bytes_read},
                         {"bytes_written", t.bytes_written},
                         {"writes", t.writes},
                         {"writes_skipped", t.writes_skipped},
                         {"errors", t.errors},
                         {"rejected", t.rejected},
                         {"bytes_held", t.usage.bytes},
                         {"evictions", t.usage.evictions},
                         {"forgotten", t.usage.forgotten},
                         {"account_errors", t.usage.account_errors},
                         {"load_ms_mean", t.hits > 0 ? t.load_ms / double(t.hits) : 0.0}});
    }
    return {{"tiers", tiers},
            {"writes_dropped", s.writes_dropped},
            {"writes_pending", s.writes_pending},
            {"bytes_pending", s.bytes_pending}};
}

}  // namespace lazyattn::cli
