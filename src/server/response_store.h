// ResponseStore: the responses POST /v1/responses keeps (store: true, OpenAI's default), so that
// GET /v1/responses/{id} can answer them, DELETE drop them, and previous_response_id continue
// their conversation. Bounded per tenant (an API key's namespace: another key can neither read
// nor delete them) in count and bytes, and in bytes overall; past a bound the least recently
// used go first (the tenant's own, or, for the overall bound, the largest tenant's). A response
// larger than a tenant's bound is not kept. Memory only: a restart forgets them. Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/chat_template.h"

namespace lazyattn::server {

struct StoredResponse {
    std::string body;  // the response object as it was answered
    // Its input turns and its answer, in order, function calls and their outputs included.
    std::vector<tokenizer::ChatMessage> conversation;
    size_t bytes() const;
};

class ResponseStore {
public:
    struct Limits {
        size_t max_per_tenant = 256;
        size_t max_bytes_per_tenant = size_t(16) << 20;
        size_t max_bytes = size_t(256) << 20;
    };

    explicit ResponseStore(Limits limits);

    void put(const std::string& tenant, const std::string& id, StoredResponse response);
    // A copy of the response (now the tenant's most recently used), or nullopt.
    std::optional<StoredResponse> get(const std::string& tenant, const std::string& id);
    bool erase(const std::string& tenant, const std::string& id);

    size_t size() const;
    size_t bytes() const;

private:
    struct Entry {
        std::string id;
        StoredResponse response;
        size_t bytes = 0;
    };
    struct Tenant {
        std::list<Entry> lru;  // most recent first
        size_t bytes = 0;
    };

    std::list<Entry>::iterator find(Tenant& t, const std::string& id);
    void drop_oldest(std::map<std::string, Tenant>::iterator t);

    const Limits limits_;
    mutable std::mutex mu_;
    std::map<std::string, Tenant> tenants_;
    size_t count_ = 0;
    size_t bytes_ = 0;
};

}  // namespace lazyattn::server
