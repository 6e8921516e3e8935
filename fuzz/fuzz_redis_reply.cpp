// libFuzzer target: bytes a Redis node (or something posing as one) answers, through hiredis'
// reader with the budget every connection reads under (bound_reader), then each reply through
// the parsers that read node replies: the cluster slot map and MOVED/ASK redirections. The first
// byte picks how the bytes arrive in reads; the reader must stay within the budget's elements
// whatever the split, and nothing may crash on any reply shape.
#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "store/redis_node.h"
#include "store/redis_slots.h"

using namespace lazyattn::store;

namespace {

// Every error or string reply may be a redirection; every reply may be a slot map.
void parse_reply(const redisReply* r, int depth) {
    if (r == nullptr || depth > 8) return;
    if ((r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_STRING) && r->str != nullptr) {
        (void)parse_redirect(std::string_view(r->str, r->len));
    }
    (void)SlotMap::from_cluster_slots(r, "asked.example");
    if (r->type == REDIS_REPLY_ARRAY) {
        for (size_t i = 0; i < r->elements && i < 64; ++i) parse_reply(r->element[i], depth + 1);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const size_t step = 1 + data[0] % 32;
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    redisReader* reader = redisReaderCreate();
    RedisReplyBudget budget{4096, -1};  // small, so the fuzzer meets the bound often
    bound_reader(reader, &budget);
    for (size_t at = 0; at < input.size(); at += step) {
        const std::string_view piece = input.substr(at, step);
        if (redisReaderFeed(reader, piece.data(), piece.size()) != REDIS_OK) break;
        void* raw = nullptr;
        bool failed = false;
        while (true) {
            if (redisReaderGetReply(reader, &raw) != REDIS_OK) {
                failed = true;
                break;
            }
            if (raw == nullptr) break;
            parse_reply(static_cast<const redisReply*>(raw), 0);
            freeReplyObject(raw);
        }
        if (failed) break;
    }
    redisReaderFree(reader);
    return 0;
}
