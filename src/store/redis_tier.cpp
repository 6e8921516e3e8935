#include "store/redis_tier.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <random>

#include "core/log.h"
#include "store/redis_account_scripts.h"

namespace lazyattn::store {
namespace {

constexpr auto kRepairInterval = std::chrono::seconds(60);        // after an error reply, not garbage found
constexpr auto kMovedRefresh = std::chrono::milliseconds(100);    // map re-read after a MOVED, at most
constexpr auto kFailedRefresh = std::chrono::milliseconds(1000);  // after a gap or a failed node
constexpr auto kRediscoverInterval = std::chrono::milliseconds(1000);
constexpr auto kWriteTimeout = std::chrono::milliseconds(5000);  // the writer's, plus its bytes' time to send
// Read per call beyond the largest entry: a GET's framing and the replies pipelined with it, a
// CLUSTER SLOTS or CLUSTER NODES of a large cluster.
constexpr int64_t kReplyFraming = 1 << 20;
constexpr int64_t kAuditEvery = 32;  // accounting runs between checks that the sizes sum up
constexpr size_t kMaxUnaccounted = 4096;
constexpr size_t kRetriesPerWrite = 8;

// The score of a use in the LRU index: unix microseconds (exact in a double), strictly
// increasing within this process, so a use always ranks newer than every earlier one even
// within the clock's resolution (ties would rank by key name).
int64_t next_use_us() {
    static std::atomic<int64_t> latest{0};
    const int64_t now =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    int64_t seen = latest.load();
    int64_t mine = std::max(now, seen + 1);
    while (!latest.compare_exchange_weak(seen, mine)) mine = std::max(now, seen + 1);
    return mine;
}

std::string_view text(const redisReply* r) {
    return r != nullptr && r->str != nullptr ? std::string_view(r->str, r->len) : std::string_view();
}
bool is_error(const redisReply* r, std::string_view prefix = "") {
    return r != nullptr && r->type == REDIS_REPLY_ERROR && text(r).rfind(prefix, 0) == 0;
}

// Bucket b's hash tag: "b<j>" for the first j whose slot lies in the b-th of kClusterBuckets
// equal parts of the slot space, so the buckets spread over the masters as evenly as the slots.
std::string bucket_tag(int b) {
    const int lo = b * kNumSlots / kClusterBuckets, hi = (b + 1) * kNumSlots / kClusterBuckets;
    for (int j = 0;; ++j) {
        std::string tag = "b" + std::to_string(j);
        const int slot = key_slot(tag);
        if (slot >= lo && slot < hi) return tag;
    }
}

}  // namespace

RedisTier::RedisTier(RedisAddress address, const std::string& url, const TierOptions& options)
    : address_(std::move(address)), url_(redact_redis_url(url)), options_(options) {
    if (address_.seeds.empty()) address_.seeds.push_back({address_.host, address_.port});
    limits_.read_deadline = std::chrono::milliseconds(int64_t(std::ceil(std::max(1.0, options.read_timeout_ms))));
    limits_.write_deadline = kWriteTimeout;
    limits_.max_reply_bytes = std::max<int64_t>(0, options.max_entry_bytes) + kReplyFraming;
    usage_.max_bytes = options.max_bytes;
    owner_.assign(kNumSlots, nullptr);
    for (const RedisEndpoint& seed : address_.seeds) nodes_.push_back(make_node(seed));
    mapped_nodes_ = nodes_.size();
}

RedisTier::~RedisTier() = default;

TierUsage RedisTier::usage() const {
    TierUsage u;
    {
        std::lock_guard<std::mutex> lock(usage_mu_);
        u = usage_;
    }
    u.up = failed_calls_.load() < kFailedCallsBeforeDown;
    std::lock_guard<std::mutex> lock(map_mu_);
    for (const auto& n : nodes_) u.up = u.up && !n->down();
    if (mode_.load() == Mode::kUnknown && discovery_error_.code() == StatusCode::kInvalidArgument) u.up = false;
    u.unserved_slots = unserved_slots_;
    return u;
}

size_t RedisTier::num_nodes() const {
    std::lock_guard<std::mutex> lock(map_mu_);
    return nodes_.size();
}

void RedisTier::abort_writes() {
    aborted_ = true;
    std::lock_guard<std::mutex> lock(map_mu_);
    for (const auto& n : nodes_) n->abort_writes();
}

std::string RedisTier::entry_key(const std::string& key) const {
    if (mode_.load() == Mode::kUnknown) return "";
    return buckets_[size_t(bucket_of(key))].prefix + key;
}

int RedisTier::bucket_of(const std::string& key) const {
    return buckets_.size() == 1 ? 0 : int(crc16(key) % buckets_.size());
}

RedisTier::NodePtr RedisTier::make_node(const RedisEndpoint& e) const {
    auto node =
        std::make_shared<RedisNode>(e, RedisCredentials{address_.user, address_.password, address_.db}, limits_, url_);
    if (aborted_) node->abort_writes();
    return node;
}

RedisTier::NodePtr RedisTier::node_at(const RedisEndpoint& e) {
    for (const auto& n : nodes_) {
        if (n->endpoint() == e) return n;
    }
    if (nodes_.size() >= mapped_nodes_ + kMaxStrayNodes) return nullptr;
    nodes_.push_back(make_node(e));
    return nodes_.back();
}

Status RedisTier::discover(Role role) {
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
            is_error(reply) && (text(reply).find("cluster support disabled") != std::string::npos ||
                                is_error(reply, "ERR unknown command") || is_error(reply, "NOPERM"));
        if (standalone && address_.seeds.size() > 1) {
            error = invalid_argument("redis " + url_ + " names several nodes, but " + seed.str() +
                                     " is a standalone Redis, not a cluster node (" + std::string(text(reply)) + ")");
            break;
        }
        if (standalone) {
            std::lock_guard<std::mutex> lock(map_mu_);
            buckets_ = {Bucket{"lazyattn:seg:", "lazyattn:seg:index", "lazyattn:seg:bytes", "lazyattn:seg:sizes", 0}};
            owner_.assign(kNumSlots, node);
            {
                std::lock_guard<std::mutex> u(usage_mu_);
                bucket_bytes_.assign(1, 0);
            }
            mode_ = Mode::kStandalone;
            return {};
        }
        auto map = SlotMap::from_cluster_slots(reply, seed.host);
        if (!map.ok()) {
            error = io_error(
                "redis " + url_ + " (node " + seed.str() + "): " +
                (is_error(reply) ? "CLUSTER SLOTS failed: " + std::string(text(reply)) : map.status().message()));
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

Status RedisTier::use_cluster(Role role, const SlotMap& map, const RedisEndpoint& source) {
    LA_RETURN_IF_ERROR(check_seeds(role, map, source));
    std::lock_guard<std::mutex> lock(map_mu_);
    buckets_.clear();
    for (int b = 0; b < kClusterBuckets; ++b) {
        const std::string prefix = "lazyattn:seg:{" + bucket_tag(b) + "}:";
        buckets_.push_back({prefix, prefix + "index", prefix + "bytes", prefix + "sizes", key_slot(prefix)});
    }
    install_map_locked(map);
    {
        std::lock_guard<std::mutex> u(usage_mu_);
        bucket_bytes_.assign(size_t(kClusterBuckets), 0);
    }
    discovery_error_ = {};
    mode_ = Mode::kCluster;
    log::info("KV store: the Redis tier is a cluster",
              {{"where", url_}, {"masters", int64_t(map.masters.size())}, {"unserved_slots", map.num_gaps()}});
    return {};
}

Status RedisTier::check_seeds(Role role, const SlotMap& map, const RedisEndpoint& source) {
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
        const std::string id(text(r[0].get()));
        if (is_error(r[0].get()) || id.empty()) {
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
            if (src != nullptr && src->call(role, {{"CLUSTER", "NODES"}}, &nodes).ok() && !is_error(nodes[0].get())) {
                const std::string_view all = text(nodes[0].get());
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

Status RedisTier::check_stranger(Role role, RedisNode& node, const RedisEndpoint& seed, const RedisEndpoint& source) {
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

void RedisTier::install_map_locked(const SlotMap& map) {
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

void RedisTier::refresh_map(Role role, RedisNode* first, std::chrono::milliseconds min_interval) {
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

Expected<RedisTier::NodePtr> RedisTier::node_for(Role role, int slot) {
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

Status RedisTier::run(Role role, int slot, const std::vector<RedisArgv>& commands, std::vector<RedisReplyPtr>* replies,
                      int asking_arg) {
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
        if (is_error(first)) redirect = parse_redirect(text(first));
        if (!redirect) return {};
        if (attempt > 0) return io_error("redis " + url_ + ": redirected twice: " + std::string(text(first)));
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

Status RedisTier::reply_error(const char* what, const redisReply* r) const {
    return io_error("redis " + url_ + ": " + what + " answered " +
                    (is_error(r) ? std::string(text(r)) : std::string("an unexpected reply")));
}

void RedisTier::note_call(const Status& st) {
    if (st.ok() || st.code() == StatusCode::kNotFound) {
        failed_calls_ = 0;
    } else if (int n = failed_calls_.load(); st.code() != StatusCode::kUnavailable && n < kFailedCallsBeforeDown) {
        failed_calls_.compare_exchange_strong(n, n + 1);
    }
}

Expected<Blob> RedisTier::get(const std::string& key) {
    Expected<Blob> got = fetch(key);
    note_call(got.status());
    return got;
}

Expected<bool> RedisTier::contains(const std::string& key) {
    Expected<bool> got = probe(key);
    note_call(got.status());
    return got;
}

Expected<bool> RedisTier::put(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) {
    if (int64_t(bytes.size()) > options_.max_entry_bytes) {  // could never be read back
        return out_of_range("redis " + url_ + ": an entry of " + std::to_string(bytes.size()) +
                            " bytes is larger than the tier's largest (" + std::to_string(options_.max_entry_bytes) +
                            ")");
    }
    Expected<bool> put = store(key, bytes, overwrite);
    note_call(put.status());
    return put;
}

Expected<Blob> RedisTier::fetch(const std::string& key) {
    if (mode_.load() == Mode::kUnknown) LA_RETURN_IF_ERROR(discover(Role::kRead));
    const Bucket& b = buckets_[size_t(bucket_of(key))];
    const std::string k = b.prefix + key, now = std::to_string(next_use_us());
    // GET, and the entry's use noted (or, gone, forgotten): one round trip. The note is best
    // effort (a slot in migration may refuse it).
    std::vector<RedisReplyPtr> r;
    LA_RETURN_IF_ERROR(
        run(Role::kRead, b.slot, {{"GET", k}, {"EVAL", kTouchScript, "4", k, b.index, b.bytes, b.sizes, now}}, &r));
    if (r[1]->type == REDIS_REPLY_INTEGER && r[1]->integer == 1) {
        std::lock_guard<std::mutex> u(usage_mu_);
        ++usage_.forgotten;
    }
    RedisReplyPtr reply = r[0];
    if (reply->type == REDIS_REPLY_NIL) return not_found("no entry " + key);
    if (is_error(reply.get(), "WRONGTYPE")) {
        return Blob{};  // another type where an entry belongs: a corrupt entry (rejected, then replaced)
    }
    if (reply->type != REDIS_REPLY_STRING) return reply_error("GET", reply.get());
    Blob blob;
    blob.bytes = {reinterpret_cast<const uint8_t*>(reply->str), reply->len};
    blob.owner = std::move(reply);
    return blob;
}

Expected<bool> RedisTier::probe(const std::string& key) {
    if (mode_.load() == Mode::kUnknown) LA_RETURN_IF_ERROR(discover(Role::kRead));
    const Bucket& b = buckets_[size_t(bucket_of(key))];
    const std::string k = b.prefix + key;
    std::vector<RedisReplyPtr> r;
    LA_RETURN_IF_ERROR(run(Role::kRead, b.slot, {{"EXISTS", k}}, &r));
    if (r[0]->type != REDIS_REPLY_INTEGER) return reply_error("EXISTS", r[0].get());
    return r[0]->integer > 0;
}

Expected<bool> RedisTier::store(const std::string& key, std::span<const uint8_t> bytes, bool overwrite) {
    std::lock_guard<std::mutex> lock(write_mu_);
    if (aborted_) return unavailable("redis " + url_ + ": writes aborted (shutting down)");
    if (mode_.load() == Mode::kUnknown) LA_RETURN_IF_ERROR(discover(Role::kWrite));
    // Accounts a migration put off, oldest first.
    for (size_t i = 0; i < kRetriesPerWrite && !unaccounted_.empty(); ++i) {
        Unaccounted u = std::move(unaccounted_.front());
        unaccounted_.pop_front();
        bool retry = false;
        if (!account_locked(u.bucket, u.redis_key, u.bytes, &retry).ok() || retry) {
            unaccounted_.push_back(std::move(u));
            break;
        }
    }
    const int bucket = bucket_of(key);
    const Bucket& b = buckets_[size_t(bucket)];
    const std::string k = b.prefix + key;
    const std::string_view value(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    std::vector<RedisReplyPtr> r;
    LA_RETURN_IF_ERROR(
        run(Role::kWrite, b.slot, {overwrite ? RedisArgv{"SET", k, value} : RedisArgv{"SET", k, value, "NX"}}, &r));
    if (is_error(r[0].get())) return io_error("redis " + url_ + ": SET refused: " + std::string(text(r[0].get())));
    if (r[0]->type == REDIS_REPLY_NIL) return false;  // NX on a present key answers nil
    bool retry = false;
    LA_RETURN_IF_ERROR(account_locked(bucket, k, bytes.size(), &retry));
    if (retry) {
        if (unaccounted_.size() >= kMaxUnaccounted) unaccounted_.pop_front();  // a rebuild adopts it
        unaccounted_.push_back({bucket, k, bytes.size()});
    }
    return true;
}

Status RedisTier::account_locked(int bucket, const std::string& k, size_t bytes, bool* retry) {
    static thread_local std::minstd_rand sweep_rng{std::random_device{}()};
    const Bucket& b = buckets_[size_t(bucket)];
    const int64_t cap_bytes =
        options_.max_bytes > 0 ? std::max<int64_t>(1, options_.max_bytes / int64_t(buckets_.size())) : 0;
    const std::string size = std::to_string(bytes), cap = std::to_string(cap_bytes);
    const char* audit = num_accounted_++ % kAuditEvery == 0 ? "1" : "0";  // a process' first write too
    const char* known = "0";  // this process saw the bucket hold bytes: all of it empty is then evicted
    {
        std::lock_guard<std::mutex> u(usage_mu_);
        if (bucket_bytes_[size_t(bucket)] > 0) known = "1";
    }
    for (int attempt = 0;; ++attempt) {
        const std::string now = std::to_string(next_use_us()), offset = std::to_string(sweep_rng());
        std::vector<RedisReplyPtr> replies;
        const Status st = run(
            Role::kWrite, b.slot,
            {{"EVAL", kAccountScript, "4", k, b.index, b.bytes, b.sizes, size, now, cap, offset, audit, "0", known}},
            &replies,
            /*asking_arg=*/12);  // ARGV[6]
        if (st.code() == StatusCode::kUnavailable) return st;
        const redisReply* r = st.ok() ? replies[0].get() : nullptr;
        // A slot in migration (keys split between two nodes), redirected twice, or a cluster
        // that is down: the entry stands; its account is retried by a later write.
        if (!st.ok() || is_error(r, "TRYAGAIN") || is_error(r, "CLUSTERDOWN") || is_error(r, "ASK") ||
            is_error(r, "MOVED")) {
            *retry = true;
            return {};
        }
        const auto integer = [r](size_t i) {
            return r->element[i]->type == REDIS_REPLY_INTEGER ? r->element[i]->integer : int64_t(-1);
        };
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && integer(0) >= 0) {
            std::lock_guard<std::mutex> u(usage_mu_);
            bucket_bytes_[size_t(bucket)] = integer(0);
            usage_.bytes = std::accumulate(bucket_bytes_.begin(), bucket_bytes_.end(), int64_t(0));
            usage_.evictions += std::max<int64_t>(0, integer(1));
            usage_.forgotten += std::max<int64_t>(0, integer(2));
            return {};
        }
        // A bookkeeping key evicted whole (the script reset the rest): rebuilt. Garbage in it
        // (reset too), or an error reply (scripts refused, something unforeseen): counted and
        // rebuilt, after an error reply at most once a minute, as it may come back every write.
        const bool reset = r->type == REDIS_REPLY_ARRAY && r->elements == 2 && (integer(0) == -1 || integer(0) == -2) &&
                           r->element[1]->type == REDIS_REPLY_STRING;
        if (!reset || integer(0) == -1) {
            note_account_error(reset         ? std::string(text(r->element[1]))
                               : is_error(r) ? "the accounting script failed: " + std::string(text(r))
                                             : "the accounting script answered nonsense");
        }
        const auto t = std::chrono::steady_clock::now();
        if (attempt > 0 || (!reset && t < next_repair_)) return {};
        if (!reset) next_repair_ = t + kRepairInterval;
        LA_RETURN_IF_ERROR(
            rebuild_account_locked(bucket, reset ? std::string(text(r->element[1])) : "the accounting script failed"));
    }
}

Status RedisTier::rebuild_account_locked(int bucket, const std::string& why) {
    const Bucket& b = buckets_[size_t(bucket)];
    std::vector<RedisReplyPtr> r;
    LA_RETURN_IF_ERROR(run(Role::kWrite, b.slot, {{"DEL", b.index, b.bytes, b.sizes}}, &r));
    const std::string now = std::to_string(next_use_us()), pattern = b.prefix + "*";
    std::string cursor = "0";
    int64_t adopted = 0;
    do {
        std::vector<RedisReplyPtr> scan;
        LA_RETURN_IF_ERROR(run(Role::kWrite, b.slot, {{"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"}}, &scan));
        const redisReply* s = scan[0].get();
        if (s->type != REDIS_REPLY_ARRAY || s->elements != 2 || s->element[0]->type != REDIS_REPLY_STRING ||
            s->element[1]->type != REDIS_REPLY_ARRAY) {
            note_account_error("the rebuild's SCAN failed" +
                               (is_error(s) ? ": " + std::string(text(s)) : std::string()));
            return {};
        }
        cursor = std::string(text(s->element[0]));
        const redisReply* keys = s->element[1];
        if (keys->elements == 0) continue;
        RedisArgv adopt = {"EVAL", kAdoptScript, "3", b.index, b.bytes, b.sizes, now};
        for (size_t i = 0; i < keys->elements; ++i) adopt.push_back(text(keys->element[i]));
        std::vector<RedisReplyPtr> a;
        LA_RETURN_IF_ERROR(run(Role::kWrite, b.slot, {adopt}, &a));
        if (a[0]->type != REDIS_REPLY_INTEGER) {
            note_account_error("the rebuild failed" +
                               (is_error(a[0].get()) ? ": " + std::string(text(a[0].get())) : std::string()));
            return {};
        }
        adopted += a[0]->integer;
    } while (cursor != "0");
    log::info("KV store: the Redis tier's size account was rebuilt from the entries present",
              {{"where", url_}, {"why", why}, {"entries", adopted}});
    return {};
}

void RedisTier::note_account_error(const std::string& why) {
    std::lock_guard<std::mutex> lock(usage_mu_);
    if (usage_.account_errors++ == 0) {
        log::warn(
            "KV store: the Redis tier's size account was broken; it is rebuilt from the entries present "
            "(later ones are only counted: lazyattn_kv_store_account_errors_total)",
            {{"where", url_}, {"problem", why}});
    }
}

}  // namespace lazyattn::store
