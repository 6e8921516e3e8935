// StopMatcher: finds stop strings in streamed text. It releases text only once no stop string
// can still begin inside it, so a stop string split across tokens never leaks to the client.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace lazyattn::engine {

class StopMatcher {
public:
    // Shares the list (a request's choices all read one copy); null or empty: no stop strings.
    explicit StopMatcher(std::shared_ptr<const std::vector<std::string>> stops);
    explicit StopMatcher(std::vector<std::string> stops)
        : StopMatcher(std::make_shared<const std::vector<std::string>>(std::move(stops))) {}

    // Appends new text; returns the text that is now safe to emit. After a stop string is seen,
    // stopped() is true and the text before it has been emitted.
    std::string push(const std::string& text);
    // The held-back remainder at the end of generation (no stop string was completed).
    std::string flush();
    bool stopped() const { return stopped_; }
    // The stop string found (the earliest in the text; the first listed on a tie); "" before.
    const std::string& stop_word() const { return stop_word_; }

private:
    std::shared_ptr<const std::vector<std::string>> stops_;
    std::string pending_;
    bool stopped_ = false;
    std::string stop_word_;
};

}  // namespace lazyattn::engine
