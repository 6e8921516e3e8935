#include "store/store_tier.h"

#include "store/disk_tier.h"
#include "store/redis_tier.h"
#include "store/redis_url.h"

namespace lazyattn::store {

Status WriterOptions::validate() const {
    if (max_pending_bytes < 0) return invalid_argument("the store's pending write bytes must not be negative");
    if (!(shutdown_drain_s >= 0)) return invalid_argument("the store's shutdown drain must not be negative");
    return {};
}

std::string describe(const UnreachableTier& t) {
    const bool redis = t.where.rfind("redis://", 0) == 0;
    return "--kv-store " + t.where + " cannot be reached: " + t.error.message() +
           (redis ? " (is Redis running? start it with `redis-server` or leave this --kv-store out)" : "");
}

Expected<std::unique_ptr<StoreTier>> open_tier(const std::string& uri, const TierOptions& options) {
    if (uri.empty()) return invalid_argument("--kv-store: empty location");
    if (uri.rfind("redis://", 0) == 0) {
        LA_ASSIGN_OR_RETURN(RedisAddress a, parse_redis_url(uri));
        return std::unique_ptr<StoreTier>(std::make_unique<RedisTier>(std::move(a), uri, options));
    }
    if (uri.find("://") != std::string::npos) {
        return invalid_argument("--kv-store '" + redact_redis_url(uri) +
                                "': a directory or redis://[[USER]:PASSWORD@]HOST:PORT[,HOST:PORT...][/DB]");
    }
    LA_ASSIGN_OR_RETURN(auto disk, DiskTier::open(uri, options));
    return std::unique_ptr<StoreTier>(std::move(disk));
}

}  // namespace lazyattn::store
