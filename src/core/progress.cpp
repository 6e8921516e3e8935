#include "core/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace lazyattn {

ProgressBar::ProgressBar(std::string label, int64_t total)
    : label_(std::move(label)), total_(std::max<int64_t>(total, 1)), tty_(isatty(STDERR_FILENO) == 1) {}

void ProgressBar::finish() {
    if (drawn_) std::fputc('\n', stderr);
    drawn_ = false;
}

void ProgressBar::update(int64_t done) {
    if (!tty_) return;
    constexpr int kWidth = 30;
    const int filled = int(std::clamp<int64_t>(done * kWidth / total_, 0, kWidth));
    std::fprintf(stderr, "\r  %-22s [%s%s] %lld/%lld", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), (long long)done, (long long)total_);
    std::fflush(stderr);
    drawn_ = true;
}

}  // namespace lazyattn
