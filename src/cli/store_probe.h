// Retired: the engine opens each --kv-store tier once at start-up, asks it for one key on the
// connection it keeps and reports a tier that does not answer (store::SegmentStore::open,
// EngineConfig::kv_store_unreachable), so no command probes the tiers on its own any more.
#pragma once

#include <string>
#include <vector>

#include "store/store_tier.h"

namespace lazyattn::cli {

// Nothing: the engine's store opening warns about an unreachable tier (kept for a caller that
// has not dropped its call yet; it opens nothing, so each tier is still connected once).
inline void warn_unreachable_store_tiers(const std::vector<std::string>&, const store::TierOptions&) {}

}  // namespace lazyattn::cli
