// A plain hiredis client for the store tests: what an operator, another program or Redis itself
// does to the keys behind the tier's back (CONFIG SET, DEL, garbage in the bookkeeping).
#pragma once

#include <hiredis/hiredis.h>

#include <cstdint>
#include <string>
#include <vector>

namespace lazyattn::store::testing {

class RedisClient {
public:
    explicit RedisClient(int port) : ctx_(redisConnect("127.0.0.1", port)) {}
    ~RedisClient() {
        if (ctx_ != nullptr) redisFree(ctx_);
    }
    RedisClient(const RedisClient&) = delete;
    RedisClient& operator=(const RedisClient&) = delete;
    bool ok() const { return ctx_ != nullptr && ctx_->err == 0; }

    // The reply as text: an integer's digits, a string or status as it is, "(nil)", or
    // "(error) ..." for an error; an array's elements joined by '\n'.
    std::string run(const std::vector<std::string>& words) {
        redisReply* r = command(words);
        std::string out = text(r);
        freeReplyObject(r);
        return out;
    }
    int64_t integer(const std::vector<std::string>& words) {
        redisReply* r = command(words);
        const int64_t v = r != nullptr && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
        freeReplyObject(r);
        return v;
    }
    // The keys matching a pattern (KEYS: fine on a test server).
    std::vector<std::string> keys(const std::string& pattern) {
        redisReply* r = command({"KEYS", pattern});
        std::vector<std::string> out;
        for (size_t i = 0; r != nullptr && r->type == REDIS_REPLY_ARRAY && i < r->elements; ++i) {
            out.emplace_back(r->element[i]->str, r->element[i]->len);
        }
        freeReplyObject(r);
        return out;
    }
    // Bytes of the entries the store keeps ("lazyattn:seg:<32 hex digits>" strings), and how many.
    int64_t entry_bytes(int64_t* count = nullptr) {
        int64_t bytes = 0, n = 0;
        for (const std::string& k : keys("lazyattn:seg:*")) {
            if (k.size() != 13 + 32 || run({"TYPE", k}) != "string") continue;
            bytes += integer({"STRLEN", k});
            ++n;
        }
        if (count != nullptr) *count = n;
        return bytes;
    }

private:
    redisReply* command(const std::vector<std::string>& words) {
        std::vector<const char*> argv;
        std::vector<size_t> lens;
        for (const std::string& w : words) {
            argv.push_back(w.data());
            lens.push_back(w.size());
        }
        return static_cast<redisReply*>(redisCommandArgv(ctx_, int(argv.size()), argv.data(), lens.data()));
    }
    static std::string text(const redisReply* r) {
        if (r == nullptr) return "(no reply)";
        switch (r->type) {
            case REDIS_REPLY_INTEGER:
                return std::to_string(r->integer);
            case REDIS_REPLY_NIL:
                return "(nil)";
            case REDIS_REPLY_ERROR:
                return "(error) " + std::string(r->str, r->len);
            case REDIS_REPLY_ARRAY: {
                std::string out;
                for (size_t i = 0; i < r->elements; ++i) out += (i > 0 ? "\n" : "") + text(r->element[i]);
                return out;
            }
            default:
                return std::string(r->str, r->len);
        }
    }
    redisContext* ctx_;
};

}  // namespace lazyattn::store::testing
