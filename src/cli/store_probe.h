// A start-up check of the command line's --kv-store tiers, that would otherwise fail minutes
// later: each tier is opened and asked for one key (a Redis that is not running is reported at
// once, naming the URL and the error).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "store/store_tier.h"

namespace lazyattn::cli {

struct UnreachableTier {
    std::string uri;    // the --kv-store value
    std::string where;  // the same with any password redacted
    Status error;
};

// The tiers of `uris` that cannot be opened or do not answer a lookup within the tier's timeout.
std::vector<UnreachableTier> unreachable_store_tiers(const std::vector<std::string>& uris,
                                                     const store::TierOptions& options);
// One line for a report: "--kv-store redis://h:6379 cannot be reached: <error> (is Redis running?)".
std::string describe(const UnreachableTier& t);

// For the commands that go on without a tier (serve, generate, bench rag: the tier is retried
// with a growing back-off): one warning line per unreachable tier, before the model loads.
void warn_unreachable_store_tiers(const std::vector<std::string>& uris, const store::TierOptions& options);

}  // namespace lazyattn::cli
