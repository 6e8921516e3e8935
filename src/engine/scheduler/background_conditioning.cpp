// BackgroundConditioning: sightings, the capped queue, the running task (background_conditioning.h).
#include "engine/scheduler/background_conditioning.h"

#include "engine/request/tenant.h"

namespace lazyattn::engine {

uint64_t BackgroundConditioning::key_of(const std::string& tenant, const std::vector<int32_t>& tokens,
                                        int32_t neighbours) {
    // FNV-1a over (tenant, neighbours, tokens): a collision only merges two documents' counts.
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](uint64_t x) {
        for (int i = 0; i < 8; ++i) {
            h ^= (x >> (8 * i)) & 0xff;
            h *= 1099511628211ull;
        }
    };
    for (char c : tenant) mix(uint8_t(c));
    mix(0xffu);
    mix(uint32_t(neighbours));
    for (int32_t t : tokens) mix(uint32_t(t));
    return h;
}

bool BackgroundConditioning::note(const std::string& tenant, const std::vector<int32_t>& tokens, int32_t neighbours) {
    if (!enabled() || tokens.empty() || neighbours <= 0) return false;
    const uint64_t key = key_of(tenant, tokens, neighbours);
    if (pending_.count(key) > 0) return false;
    auto [it, first] = seen_.try_emplace(key, 0);
    if (first) {
        seen_order_.push_back(key);
        while (int64_t(seen_.size()) > limits_.max_tracked ||
               int64_t(seen_order_.size()) > 2 * int64_t(limits_.max_tracked)) {
            const uint64_t old = seen_order_.front();
            seen_order_.pop_front();
            if (old != key && pending_.count(old) == 0) seen_.erase(old);
        }
        it = seen_.find(key);
    }
    if (++it->second < limits_.condition_after) return false;
    const std::string account = tenant_account(tenant);
    if (int32_t(queue_.size()) >= limits_.max_queued || queued_for_account(account) >= limits_.max_queued_per_account) {
        ++stats_.refused;  // counted still: the next sighting tries again
        it->second = limits_.condition_after;
        return false;
    }
    pending_.insert(key);
    ++per_account_[account];
    queue_.push_back({tenant, tokens, neighbours});
    return true;
}

std::optional<BackgroundTask> BackgroundConditioning::start_next() {
    if (queue_.empty() || running_) return std::nullopt;
    BackgroundTask task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    ++stats_.started;
    return task;
}

void BackgroundConditioning::cancelled(BackgroundTask task) {
    running_ = false;
    ++stats_.cancelled;
    queue_.push_front(std::move(task));
}

void BackgroundConditioning::postponed(BackgroundTask task) {
    running_ = false;
    --stats_.started;
    queue_.push_front(std::move(task));
}

void BackgroundConditioning::finished(const BackgroundTask& task, bool made) {
    running_ = false;
    ++(made ? stats_.done : stats_.skipped);
    const uint64_t key = key_of(task.tenant, task.tokens, task.neighbours);
    pending_.erase(key);
    seen_.erase(key);
    const std::string account = tenant_account(task.tenant);
    if (auto it = per_account_.find(account); it != per_account_.end() && --it->second <= 0) per_account_.erase(it);
}

int32_t BackgroundConditioning::queued_for_account(const std::string& account) const {
    auto it = per_account_.find(account);
    return it == per_account_.end() ? 0 : it->second;
}

BackgroundStats BackgroundConditioning::stats() const {
    BackgroundStats s = stats_;
    s.queued = int64_t(queue_.size());
    s.running = running_ ? 1 : 0;
    return s;
}

}  // namespace lazyattn::engine
