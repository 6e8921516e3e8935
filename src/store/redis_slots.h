// Redis Cluster key routing, on plain hiredis (Debian's 0.14 has no cluster support and no
// cluster client is packaged): a key's hash slot (CRC16-XMODEM mod 16384 of the key, or of its
// hash tag, the part between the first '{' and the next '}' when non-empty), the slot map read
// from CLUSTER SLOTS, and the MOVED/ASK redirections a node answers. The RedisTier (redis_tier.h)
// routes each entry to the node serving its slot with these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

struct redisReply;

namespace lazyattn::store {

constexpr int kNumSlots = 16384;

// Redis' CRC16 (XMODEM: polynomial 0x1021, initial value 0, no reflection).
uint16_t crc16(std::string_view bytes);
// The hash slot of a key, honouring a hash tag ("{user1000}.a" and "{user1000}.b" share one).
int key_slot(std::string_view key);

struct RedisEndpoint {
    std::string host;
    int port = 6379;
    std::string str() const { return host + ":" + std::to_string(port); }
    bool operator==(const RedisEndpoint&) const = default;
};

// A node's "MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>" error reply. An empty host
// (Redis 7 with an unknown endpoint) means the node that answered.
struct RedisRedirect {
    bool ask = false;  // ASK: this command only, preceded by ASKING; MOVED: the slot moved for good
    int slot = 0;
    RedisEndpoint to;
};
std::optional<RedisRedirect> parse_redirect(std::string_view error);

// Which master serves each slot, and the ids of every node the map names (masters and replicas).
struct SlotMap {
    std::vector<RedisEndpoint> masters;
    std::vector<int16_t> owner = std::vector<int16_t>(kNumSlots, -1);  // index into masters; -1: a gap
    std::vector<std::string> node_ids;

    int num_gaps() const;
    // From a CLUSTER SLOTS reply; `asked` stands in for an empty or "?" host (a node that does not
    // know its own address). A master without a usable port (a node that lost its address) leaves
    // its slots a gap. kInvalidArgument on a malformed reply (never a crash).
    static Expected<SlotMap> from_cluster_slots(const redisReply* reply, const std::string& asked);
};

}  // namespace lazyattn::store
