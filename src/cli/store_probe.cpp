#include "cli/store_probe.h"

#include "core/log.h"
#include "store/redis_url.h"

namespace lazyattn::cli {

std::vector<UnreachableTier> unreachable_store_tiers(const std::vector<std::string>& uris,
                                                     const store::TierOptions& options) {
    std::vector<UnreachableTier> out;
    for (const std::string& uri : uris) {
        const std::string where = uri.rfind("redis://", 0) == 0 ? store::redact_redis_url(uri) : uri;
        auto tier = store::open_tier(uri, options);
        if (!tier.ok()) {
            out.push_back({uri, where, tier.status()});
            continue;
        }
        // Absent is the expected answer; an error is a tier that does not answer.
        const Expected<bool> probe = (*tier)->contains(std::string(64, '0'));
        if (!probe.ok()) out.push_back({uri, where, probe.status()});
    }
    return out;
}

std::string describe(const UnreachableTier& t) {
    const bool redis = t.where.rfind("redis://", 0) == 0;
    return "--kv-store " + t.where + " cannot be reached: " + t.error.message() +
           (redis ? " (is Redis running? start it with `redis-server` or leave this --kv-store out)" : "");
}

void warn_unreachable_store_tiers(const std::vector<std::string>& uris, const store::TierOptions& options) {
    for (const UnreachableTier& t : unreachable_store_tiers(uris, options)) {
        log::warn(describe(t) + "; going on without it (it is retried with a growing back-off)");
    }
}

}  // namespace lazyattn::cli
