// The persistent store's statistics as JSON (generate --json, bench rag): one object per tier.
#pragma once

#include <nlohmann/json.hpp>

#include "store/segment_store.h"

namespace lazyattn::cli {

nlohmann::json store_stats_json(const store::StoreStats& s);

}  // namespace lazyattn::cli
