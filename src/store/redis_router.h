// RedisRouter: which Redis node serves a key's slot, for RedisTier. On a standalone Redis or a
// Redis Cluster, detected at the first call (CLUSTER SLOTS; a standalone answers that cluster
// support is disabled), never configured twice. On a cluster each slot is routed to the master
// serving it (redis_slots.h), a MOVED updates the map (and re-reads it, at most every 100 ms) and
// is retried once, an ASK is followed with ASKING. A slot the map leaves unserved, a CLUSTERDOWN
// or TRYAGAIN answer is a failed call, never a wait.
// Each node has its own read and write connections, deadlines and back-off (redis_node.h): a
// node that is down, hung or answering garbage costs one deadline per back-off, and only for its
// own slots. The node table holds the seeds, the map's masters and at most kMaxStrayNodes others
// (redirection targets the map does not name yet); each map read drops the rest, closing their
// connections, so a node that names endless endpoints cannot make this process open endless
// sockets. A master the map lists without an address (lost) leaves its slots a gap; a seed that
// serves no slots (a node that came back empty, with another identity) is not taken for a node of
// another cluster.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "store/redis_node.h"
#include "store/redis_slots.h"
#include "store/redis_url.h"

namespace lazyattn::store {

constexpr size_t kMaxStrayNodes = 16;

class RedisRouter {
public:
    enum class Mode { kUnknown, kStandalone, kCluster };
    using Role = RedisNode::Role;
    using NodePtr = std::shared_ptr<RedisNode>;  // a call in flight keeps a dropped node alive

    struct Health {
        bool nodes_up = true;        // no node marked down, and the URL not misconfigured
        int64_t unserved_slots = 0;  // the map's gaps
    };

    // `url` is only shown (logs, errors), already redacted. `on_mode` runs once, when the mode is
    // found and before any call sees it (the tier lays out its keys for the mode there).
    RedisRouter(RedisAddress address, std::string url, RedisCallLimits limits, std::function<void(Mode)> on_mode);

    Mode mode() const { return mode_.load(); }
    // Finds the mode when it is not known yet (the inference thread's reads do not wait for the
    // writer's discovery: they fail as unavailable).
    Status discover(Role role);
    // Runs `commands` for keys of `slot` on the node serving it; follows one MOVED or ASK (decided
    // by the first command's reply; sent after ASKING, the first command's word `asking_arg`, when
    // given, becomes "1"). Error replies other than redirections are left to the caller.
    Status run(Role role, int slot, const std::vector<RedisArgv>& commands, std::vector<RedisReplyPtr>* replies,
               int asking_arg = -1);

    Health health() const;
    size_t num_nodes() const;  // seeds, masters, strays
    void abort_writes();       // shuts every node's write connection down, now and for nodes made later

private:
    // The node serving a slot: discovers the mode first, and re-reads the map on a gap.
    Expected<NodePtr> node_for(Role role, int slot);
    NodePtr node_at(const RedisEndpoint& e);  // map_mu_ held: found or made (nullptr: too many)
    NodePtr make_node(const RedisEndpoint& e) const;
    // A seed outside the map's cluster: a configuration error unless it serves no slots at all.
    Status check_stranger(Role role, RedisNode& node, const RedisEndpoint& seed, const RedisEndpoint& source);
    // Checks the seeds against `map` (read from `source`), then routes by it.
    Status use_cluster(Role role, const SlotMap& map, const RedisEndpoint& source);
    Status check_seeds(Role role, const SlotMap& map, const RedisEndpoint& source);
    // Re-reads the slot map (at most every `min_interval`), from `first` when given, else any node
    // not marked down.
    void refresh_map(Role role, RedisNode* first, std::chrono::milliseconds min_interval);
    void install_map_locked(const SlotMap& map);  // map_mu_ held; drops nodes it no longer needs

    RedisAddress address_;
    std::string url_;
    RedisCallLimits limits_;
    std::function<void(Mode)> on_mode_;
    std::atomic<bool> aborted_{false};

    mutable std::mutex map_mu_;
    std::atomic<Mode> mode_{Mode::kUnknown};
    std::vector<NodePtr> nodes_;  // under map_mu_: the seeds first, then the map's masters, then strays
    size_t mapped_nodes_ = 0;     // under map_mu_: nodes_ before the strays
    std::vector<NodePtr> owner_;  // under map_mu_: per slot; nullptr: a gap
    int64_t unserved_slots_ = 0;  // under map_mu_: owner_'s gaps (usage() runs every engine step)
    std::chrono::steady_clock::time_point last_refresh_{}, next_discovery_{};  // under map_mu_
    Status discovery_error_;                                                   // under map_mu_
    std::mutex discover_mu_;                                                   // one discovery at a time
};

}  // namespace lazyattn::store
