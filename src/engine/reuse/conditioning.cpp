#include "engine/reuse/conditioning.h"

#include <algorithm>

#include "engine/request/document_reuse.h"

namespace lazyattn::engine {

ConditioningPrefix conditioning_prefix(const NeighbourIndex& index, const std::string& tenant,
                                       const std::vector<int32_t>& document, int32_t k) {
    ConditioningPrefix prefix;
    const auto near = index.nearest(tenant, document, k);
    prefix.short_of_neighbours = int32_t(near.size()) < k;
    const size_t share =
        std::min(document.size(), size_t(DocumentReuse::kMaxNeighbourTokens) / std::max<size_t>(1, near.size()));
    for (auto it = near.rbegin(); it != near.rend(); ++it) {
        const std::vector<int32_t>& n = **it;
        prefix.tokens.insert(prefix.tokens.end(), n.begin(), n.begin() + int64_t(std::min(n.size(), share)));
    }
    return prefix;
}

kv::BlockHash conditioned_seed(const kv::BlockHash& seed, int32_t k) {
    return kv::hash_salt(seed, "neighbours=" + std::to_string(k));
}

}  // namespace lazyattn::engine
