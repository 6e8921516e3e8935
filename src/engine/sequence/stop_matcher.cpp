#include "engine/sequence/stop_matcher.h"

#include <algorithm>

namespace lazyattn::engine {

StopMatcher::StopMatcher(std::shared_ptr<const std::vector<std::string>> stops) : stops_(std::move(stops)) {
    if (!stops_) stops_ = std::make_shared<const std::vector<std::string>>();
}

std::string StopMatcher::push(const std::string& text) {
    if (stopped_) return {};
    pending_ += text;
    size_t first_stop = std::string::npos;
    const std::string* word = nullptr;
    for (const auto& s : *stops_) {
        if (s.empty()) continue;
        const size_t at = pending_.find(s);
        if (at < first_stop) {
            first_stop = at;
            word = &s;
        }
    }
    if (first_stop != std::string::npos) {
        stopped_ = true;
        stop_word_ = *word;
        std::string out = pending_.substr(0, first_stop);
        pending_.clear();
        return out;
    }
    // Hold back the longest suffix that is a proper prefix of some stop string.
    size_t hold = 0;
    for (const auto& s : *stops_) {
        if (s.empty()) continue;
        for (size_t len = std::min(s.size() - 1, pending_.size()); len > hold; --len) {
            if (pending_.compare(pending_.size() - len, len, s, 0, len) == 0) {
                hold = len;
                break;
            }
        }
    }
    std::string out = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
    return out;
}

std::string StopMatcher::flush() {
    std::string out;
    if (!stopped_) out.swap(pending_);
    return out;
}

}  // namespace lazyattn::engine
