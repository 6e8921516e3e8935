#include "store/redis_router.h"

#include <algorithm>
#include <map>
#include <optional>

#include "core/log.h"
#include "store/redis_reply.h"

namespace lazyattn::store {
namespace {

constexpr auto kMovedRefresh = std::chrono::milliseconds(100);    // map re-read after a MOVED, at most
constexpr auto kFailedRefresh = std::chrono::milliseconds(1000);  // after a gap or a failed node
constexpr auto kRediscoverInterval = std::chrono::milliseconds(1000);

}  // namespace

RedisRouter::RedisRouter(RedisAddress address, std::string url, RedisCallLimits limits,
                         std::function<void(Mode)> on_mode)
    : address_(std::move(address)), url_(std::move(url)), limits_(limits), on_mode_(std::move(on_mode)) {
    if (address_.seeds.empty()) address_.seeds.push_back({address_.host, address_.port});
    owner_.assign(kNumSlots, nullptr);
    for (const RedisEndpoint& seed : address_.seeds) nodes_.push_back(make_node(seed));
    mapped_nodes_ = nodes_.size();
}

RedisRouter::Health RedisRouter::health() const {
    Health h;
    std::lock_guard<std::mutex> lock(map_mu_);
    for (const auto& n : nodes_) h.nodes_up = h.nodes_up && !n->down();
    if (mode_.load() == Mode::kUnknown && discovery_error_.code() == StatusCode::kInvalidArgument) h.nodes_up = false;
    h.unserved_slots = unserved_slots_;
    return h;
}

size_t RedisRouter::num_nodes() const {
    std::lock_guard<std::mutex> lock(map_mu_);
    return nodes_.size();
}

void RedisRouter::abort_writes() {
    aborted_ = true;
    std::lock_guard<std::mutex> lock(map_mu_);
    for (const auto& n : nodes_) n->abort_writes();
}

RedisRouter::NodePtr RedisRouter::make_node(const RedisEndpoint& e) const {
    auto node =
        std::make_shared<RedisNode>(e, RedisCredentials{address_.user, address_.password, address_.db}, limits_, url_);
    if (aborted_) node->abort_writes();
    return node;
}

RedisRouter::NodePtr RedisRouter::node_at(const RedisEndpoint& e) {
    for (const auto& n : nodes_) {
        if (n->endpoint() == e) return n;
    }
    if (nodes_.size() >= mapped_nodes_ + kMaxStrayNodes) return nullptr;
    nodes_.push_back(make_node(e));
    return nodes_.back();
}

Status RedisRouter::discover(Role role) {
    // One discovery at a time. The inference thread never waits on the writer's (whose deadline
    // is the write timeout): it misses instead.
    std::unique_lock<std::mutex> one(discover_mu_, std::defer_lock);
    if (role == Role::kWrite) {
        one.lock();
    } else if (!one.try_lock()) {
        return unavailable("redis " + url_ + " is being connected to (retrying later)");
    }
    {
        std::lock_guard<std::mutex> lock(map_mu_);
        if (mode_.load() != Mode::kUnknown) return {};
        if (std::chrono::steady_clock::now() < next_discovery_) {
            if (discovery_error_.code() != StatusCode::kUnavailable) return discovery_error_;
            return unavailable("redis " + url_ + " is down (retrying later): " + discovery_error_.message());
        }
    }
    Status error = unavailable("redis " + url_ + ": no node answered");
    // A seed that serves no slots (one that came back empty with a new identity, or has not
    // joined yet) knows nothing of the cluster: the next seed is asked; its map is the last resort.
    std::optional<SlotMap> empty_map;
    RedisEndpoint empty_source;
    for (const RedisEndpoint& seed : address_.seeds) {
        NodePtr node;
        {
            std::lock_guard<std::mutex> lock(map_mu_);
            node = node_at(seed);
        }
        std::vector<RedisReplyPtr> r;
        if (Status st = node->call(role, {{"CLUSTER", "SLOTS"}}, &r); !st.ok()) {
            error = st;
            continue;
        }
        const redisReply* reply = r[0].get();
        // A standalone Redis (or a proxy, or a user not allowed CLUSTER, in front of one).
        const bool standalone =
            is_error_reply(reply) && (reply_text(reply).find("cluster support disabled") != std::string::npos ||
                                      is_error_reply(reply, "ERR unknown command") || is_error_reply(reply, "NOPERM"));
        if (standalone && address_.seeds.size() > 1) {
            error =
                invalid_argument("redis " + url_ + " names several nodes, but " + seed.str() +
                                 " is a standalone Redis, not a cluster node (" + std::string(reply_text(reply)) + ")");
            break;
        }
        if (standalone) {
            std::lock_guard<std::mutex> lock(map_mu_);
            owner_.assign(kNumSlots, node);
            on_mode_(Mode::kStandalone);
            mode_ = Mode::kStandalone;
            return {};
        }
        auto map = SlotMap::from_cluster_slots(reply, seed.host);
        if (!map.ok()) {
            error = io_error("redis " + url_ + " (node " + seed.str() + "): " +
                             (is_error_reply(reply) ? "CLUSTER SLOTS failed: " + std::string(reply_text(reply))
                                                    : map.status().message()));
            continue;
        }
        if (map->masters.empty()) {
            if (!empty_map) empty_map = std::move(*map), empty_source = seed;
            continue;
        }
        error = use_cluster(role, *map, seed);
        if (error.ok()) return {};
        break;
    }
    if (empty_map && error.code() != StatusCode::kInvalidArgument) {
        error = use_cluster(role, *empty_map, empty_source);
        if (error.ok()) return {};
    }
    std::lock_guard<std::mutex> lock(map_mu_);
    discovery_error_ = error;
    next_discovery_ = std::chrono::steady_clock::now() + kRediscoverInterval;
    return error;
}

Status RedisRouter::use_cluster(Role role, const SlotMap& map, const RedisEndpoint& source) {
    LA_RETURN_IF_ERROR(check_seeds(role, map, source));
    std::lock_guard<std::mutex> lock(map_mu_);
    install_map_locked(map);
    on_mode_(Mode::kCluster);
    discovery_error_ = {};
    mode_ = Mode::kCluster;
    log::info("KV store: the Redis tier is a cluster",
              {{"where", url_}, {"masters", int64_t(map.masters.size())}, {"unserved_slots", map.num_gaps()}});
    return {};
}

Status RedisRouter::check_seeds(Role role, const SlotMap& map, const RedisEndpoint& source) {
    std::vector<std::string> known = map.node_ids;  // then every node the source knows, if needed
    bool asked_all = false;
    for (const RedisEndpoint& seed : address_.seeds) {
        if (seed == source) continue;
        NodePtr node;
        {
            std::lock_guard<std::mutex> lock(map_mu_);
            node = node_at(seed);
        }
        std::vector<RedisReplyPtr> r;
        if (node == nullptr || !node->call(role, {{"CLUSTER", "MYID"}}, &r).ok()) continue;  // down: not checked
        const std::string id(reply_text(r[0].get()));
        if (is_error_reply(r[0].get()) || id.empty()) {
            return invalid_argument("redis " + url_ + ": " + seed.str() + " is not a cluster node (" + id + ")");
        }
        if (std::find(known.begin(), known.end(), id) == known.end() && !asked_all) {
            asked_all = true;
            NodePtr src;
            {
                std::lock_guard<std::mutex> lock(map_mu_);
                src = node_at(source);
            }
            std::vector<RedisReplyPtr> nodes;
            if (src != nullptr && src->call(role, {{"CLUSTER", "NODES"}}, &nodes).ok() &&
                !is_error_reply(nodes[0].get())) {
                const std::string_view all = reply_text(nodes[0].get());
                for (size_t from = 0; from < all.size();) {
                    size_t eol = all.find('\n', from);
                    if (eol == std::string_view::npos) eol = all.size();
                    known.emplace_back(all.substr(from, all.substr(from, eol - from).find(' ')));
                    from = eol + 1;
                }
            }
        }
        if (std::find(known.begin(), known.end(), id) == known.end()) {
            LA_RETURN_IF_ERROR(check_stranger(role, *node, seed, source));
        }
    }
    return {};
}

Status RedisRouter::check_stranger(Role role, RedisNode& node, const RedisEndpoint& seed, const RedisEndpoint& source) {
    std::vector<RedisReplyPtr> r;
    if (!node.call(role, {{"CLUSTER", "SLOTS"}}, &r).ok()) return {};  // down: not checked
    auto its = SlotMap::from_cluster_slots(r[0].get(), seed.host);
    if (its.ok() && its->masters.empty()) {
        // Serves no slots and knows no one: a node that came back empty (with a new identity) or
        // has not joined yet. Not a second cluster: nothing is routed to it.
        log::warn("KV store: a Redis node in the URL belongs to no cluster yet (serves no slots); not used",
                  {{"where", url_}, {"node", seed.str()}});
        return {};
    }
    return invalid_argument("redis " + url_ + " names nodes of two different clusters: " + seed.str() +
                            " is not in the cluster of " + source.str());
}

void RedisRouter::install_map_locked(const SlotMap& map) {
    // The new table: the seeds, then the map's masters, each the node already known when it is
    // (its connections and back-off kept). Every other node is dropped: its connections close
    // once no call holds it.
    std::map<std::string, NodePtr> old, kept;
    for (const NodePtr& n : nodes_) old.emplace(n->endpoint().str(), n);
    std::vector<NodePtr> table;
    auto keep = [&](const RedisEndpoint& e) {
        const std::string name = e.str();
        if (auto it = kept.find(name); it != kept.end()) return it->second;
        auto it = old.find(name);
        NodePtr n = it != old.end() ? it->second : make_node(e);
        kept.emplace(name, n);
        table.push_back(n);
        return n;
    };
    for (const RedisEndpoint& seed : address_.seeds) keep(seed);
    std::vector<NodePtr> masters;
    for (const RedisEndpoint& e : map.masters) masters.push_back(keep(e));
    for (int s = 0; s < kNumSlots; ++s) {
        owner_[size_t(s)] = map.owner[size_t(s)] < 0 ? nullptr : masters[size_t(map.owner[size_t(s)])];
    }
    unserved_slots_ = map.num_gaps();
    nodes_ = std::move(table);
    mapped_nodes_ = nodes_.size();
}

void RedisRouter::refresh_map(Role role, RedisNode* first, std::chrono::milliseconds min_interval) {
    std::vector<NodePtr> candidates;
    {
        std::lock_guard<std::mutex> lock(map_mu_);
        const auto now = std::chrono::steady_clock::now();
        if (mode_.load() != Mode::kCluster || now < last_refresh_ + min_interval) return;
        last_refresh_ = now;
        for (const auto& n : nodes_) {
            if (n.get() == first) candidates.insert(candidates.begin(), n);
        }
        for (const auto& n : nodes_) {
            if (n.get() != first && !n->down() && candidates.size() < 3) candidates.push_back(n);
        }
    }
    for (const NodePtr& node : candidates) {
        std::vector<RedisReplyPtr> r;
        if (!node->call(role, {{"CLUSTER", "SLOTS"}}, &r).ok()) continue;
        auto map = SlotMap::from_cluster_slots(r[0].get(), node->endpoint().host);
        if (!map.ok() || map->masters.empty()) continue;
        std::lock_guard<std::mutex> lock(map_mu_);
        install_map_locked(*map);
        return;
    }
}

Expected<RedisRouter::NodePtr> RedisRouter::node_for(Role role, int slot) {
    if (mode_.load() == Mode::kUnknown) LA_RETURN_IF_ERROR(discover(role));
    for (int pass = 0; pass < 2; ++pass) {
        {
            std::lock_guard<std::mutex> lock(map_mu_);
            if (NodePtr n = owner_[size_t(slot)]) return n;
        }
        if (pass == 0) refresh_map(role, nullptr, kFailedRefresh);
    }
    // kUnavailable, as for a node that is down: the gap shows in usage().unserved_slots, not as
    // a tier whose calls all fail.
    return unavailable("redis " + url_ + ": slot " + std::to_string(slot) +
                       " is served by no node (the cluster's slot map has a gap)");
}

Status RedisRouter::run(Role role, int slot, const std::vector<RedisArgv>& commands,
                        std::vector<RedisReplyPtr>* replies, int asking_arg) {
    LA_ASSIGN_OR_RETURN(NodePtr node, node_for(role, slot));
    bool asking = false;
    for (int attempt = 0;; ++attempt) {
        std::vector<RedisArgv> asked;
        for (size_t i = 0; asking && i < commands.size(); ++i) {
            asked.push_back({"ASKING"});
            asked.push_back(commands[i]);
            if (i == 0 && asking_arg > 0 && size_t(asking_arg) < asked.back().size()) {
                asked.back()[size_t(asking_arg)] = "1";
            }
        }
        if (Status st = node->call(role, asking ? asked : commands, replies); !st.ok()) {
            refresh_map(role, nullptr, kFailedRefresh);  // a failover may have moved its slots
            return st;
        }
        if (asking) {
            for (size_t i = 0; i < commands.size(); ++i) (*replies)[i] = (*replies)[2 * i + 1];
            replies->resize(commands.size());
        }
        const redisReply* first = (*replies)[0].get();
        std::optional<RedisRedirect> redirect;
        if (is_error_reply(first)) redirect = parse_redirect(reply_text(first));
        if (!redirect) return {};
        if (attempt > 0) return io_error("redis " + url_ + ": redirected twice: " + std::string(reply_text(first)));
        if (redirect->to.host.empty()) redirect->to.host = node->endpoint().host;
        NodePtr target;
        {
            std::lock_guard<std::mutex> lock(map_mu_);
            target = node_at(redirect->to);
            if (target != nullptr && !redirect->ask) {
                if (owner_[size_t(redirect->slot)] == nullptr) --unserved_slots_;
                owner_[size_t(redirect->slot)] = target;
            }
        }
        if (!redirect->ask || target == nullptr) refresh_map(role, target.get(), kMovedRefresh);  // drops strays
        if (target == nullptr) return io_error("redis " + url_ + ": redirected to too many nodes");
        node = target;
        asking = redirect->ask;
    }
}

}  // namespace lazyattn::store
