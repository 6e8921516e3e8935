#include "store/redis_slots.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <charconv>

namespace lazyattn::store {
namespace {

constexpr std::array<uint16_t, 256> make_crc16_table() {
    std::array<uint16_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i << 8;
        for (int b = 0; b < 8; ++b) c = (c & 0x8000) != 0 ? (c << 1) ^ 0x1021 : c << 1;
        t[i] = uint16_t(c);
    }
    return t;
}
constexpr std::array<uint16_t, 256> kCrc16Table = make_crc16_table();

bool parse_number(std::string_view s, int* out) {
    const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool is_integer(const redisReply* r) { return r != nullptr && r->type == REDIS_REPLY_INTEGER; }
bool is_string(const redisReply* r) {
    return r != nullptr && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

}  // namespace

uint16_t crc16(std::string_view bytes) {
    uint16_t crc = 0;
    for (const char ch : bytes) crc = uint16_t(crc << 8) ^ kCrc16Table[((crc >> 8) ^ uint8_t(ch)) & 0xff];
    return crc;
}

int key_slot(std::string_view key) {
    if (const size_t open = key.find('{'); open != std::string_view::npos) {
        const size_t close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
    }
    return crc16(key) & (kNumSlots - 1);
}

std::optional<RedisRedirect> parse_redirect(std::string_view error) {
    RedisRedirect r;
    if (error.rfind("MOVED ", 0) == 0) {
        error.remove_prefix(6);
    } else if (error.rfind("ASK ", 0) == 0) {
        r.ask = true;
        error.remove_prefix(4);
    } else {
        return std::nullopt;
    }
    const size_t space = error.find(' ');
    if (space == std::string_view::npos || !parse_number(error.substr(0, space), &r.slot) || r.slot < 0 ||
        r.slot >= kNumSlots) {
        return std::nullopt;
    }
    const std::string_view where = error.substr(space + 1);
    const size_t colon = where.rfind(':');
    if (colon == std::string_view::npos || !parse_number(where.substr(colon + 1), &r.to.port) || r.to.port <= 0 ||
        r.to.port > 65535) {
        return std::nullopt;
    }
    r.to.host = std::string(where.substr(0, colon));
    return r;
}

int SlotMap::num_gaps() const { return int(std::count(owner.begin(), owner.end(), int16_t(-1))); }

Expected<SlotMap> SlotMap::from_cluster_slots(const redisReply* reply, const std::string& asked) {
    if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY) {
        return invalid_argument("CLUSTER SLOTS did not answer an array");
    }
    SlotMap m;
    for (size_t i = 0; i < reply->elements; ++i) {
        const redisReply* range = reply->element[i];
        if (range == nullptr || range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
            !is_integer(range->element[0]) || !is_integer(range->element[1])) {
            return invalid_argument("CLUSTER SLOTS answered a malformed slot range");
        }
        const long long first = range->element[0]->integer, last = range->element[1]->integer;
        if (first < 0 || last >= kNumSlots || first > last) {
            return invalid_argument("CLUSTER SLOTS answered the slots " + std::to_string(first) + "-" +
                                    std::to_string(last));
        }
        for (size_t n = 2; n < range->elements; ++n) {  // the master, then its replicas
            const redisReply* node = range->element[n];
            if (node == nullptr || node->type != REDIS_REPLY_ARRAY || node->elements < 2 ||
                !is_string(node->element[0]) || !is_integer(node->element[1])) {
                return invalid_argument("CLUSTER SLOTS answered a malformed node");
            }
            if (node->elements >= 3 && is_string(node->element[2])) {
                std::string id(node->element[2]->str, node->element[2]->len);
                if (std::find(m.node_ids.begin(), m.node_ids.end(), id) == m.node_ids.end()) m.node_ids.push_back(id);
            }
            if (n > 2) continue;
            RedisEndpoint e{std::string(node->element[0]->str, node->element[0]->len), int(node->element[1]->integer)};
            if (e.host.empty() || e.host == "?") e.host = asked;
            // No address (["", 0, id]: Redis' answer for a node whose address now belongs to a
            // node of another identity): its slots are a gap, so a lost node costs its own
            // documents, never the whole map.
            if (e.port <= 0 || e.port > 65535) continue;
            auto it = std::find(m.masters.begin(), m.masters.end(), e);
            if (it == m.masters.end()) {
                if (m.masters.size() >= 4096) return invalid_argument("CLUSTER SLOTS names too many masters");
                it = m.masters.insert(m.masters.end(), e);
            }
            std::fill(m.owner.begin() + first, m.owner.begin() + last + 1, int16_t(it - m.masters.begin()));
        }
    }
    return m;
}

}  // namespace lazyattn::store
