#include "server/response_store.h"

namespace lazyattn::server {

size_t StoredResponse::bytes() const {
    size_t n = sizeof(StoredResponse) + body.size();
    for (const tokenizer::ChatMessage& m : conversation) {
        n += sizeof(m) + m.role.size() + m.content.size() + m.tool_call_id.size() + m.name.size();
        for (const tokenizer::ChatToolCall& c : m.tool_calls) {
            n += sizeof(c) + c.id.size() + c.name.size() + c.arguments.size();
        }
    }
    return n;
}

ResponseStore::ResponseStore(Limits limits) : limits_(limits) {}

// A tenant holds at most max_per_tenant entries: a linear search stays short.
std::list<ResponseStore::Entry>::iterator ResponseStore::find(Tenant& t, const std::string& id) {
    for (auto it = t.lru.begin(); it != t.lru.end(); ++it) {
        if (it->id == id) return it;
    }
    return t.lru.end();
}

void ResponseStore::drop_oldest(std::map<std::string, Tenant>::iterator t) {
    Entry& oldest = t->second.lru.back();
    t->second.bytes -= oldest.bytes;
    bytes_ -= oldest.bytes;
    --count_;
    t->second.lru.pop_back();
    if (t->second.lru.empty()) tenants_.erase(t);
}

void ResponseStore::put(const std::string& tenant, const std::string& id, StoredResponse response) {
    const size_t size = response.bytes() + id.size() + sizeof(Entry);
    if (size > limits_.max_bytes_per_tenant || size > limits_.max_bytes || limits_.max_per_tenant == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    auto t = tenants_.try_emplace(tenant).first;
    if (auto old = find(t->second, id); old != t->second.lru.end()) {
        t->second.bytes -= old->bytes;
        bytes_ -= old->bytes;
        --count_;
        t->second.lru.erase(old);
    }
    t->second.lru.push_front(Entry{id, std::move(response), size});
    t->second.bytes += size;
    bytes_ += size;
    ++count_;
    while (t->second.lru.size() > limits_.max_per_tenant || t->second.bytes > limits_.max_bytes_per_tenant) {
        drop_oldest(t);  // never the new entry: it fits the bounds alone
    }
    while (bytes_ > limits_.max_bytes) {
        auto largest = tenants_.begin();
        for (auto it = tenants_.begin(); it != tenants_.end(); ++it) {
            if (it->second.bytes > largest->second.bytes) largest = it;
        }
        drop_oldest(largest);
    }
}

std::optional<StoredResponse> ResponseStore::get(const std::string& tenant, const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto t = tenants_.find(tenant);
    if (t == tenants_.end()) return std::nullopt;
    auto it = find(t->second, id);
    if (it == t->second.lru.end()) return std::nullopt;
    t->second.lru.splice(t->second.lru.begin(), t->second.lru, it);
    return it->response;
}

bool ResponseStore::erase(const std::string& tenant, const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto t = tenants_.find(tenant);
    if (t == tenants_.end()) return false;
    auto it = find(t->second, id);
    if (it == t->second.lru.end()) return false;
    t->second.bytes -= it->bytes;
    bytes_ -= it->bytes;
    --count_;
    t->second.lru.erase(it);
    if (t->second.lru.empty()) tenants_.erase(t);
    return true;
}

size_t ResponseStore::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return count_;
}

size_t ResponseStore::bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return bytes_;
}

}  // namespace lazyattn::server
