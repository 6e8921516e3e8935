#include "core/progress.h"

#include <unistd.h>

#include <algorithm>

#include "core/timer.h"

namespace lazyattn {

ProgressBar::ProgressBar(std::string label, int64_t total)
    : ProgressBar(std::move(label), total, stderr, isatty(STDERR_FILENO) == 1) {}

ProgressBar::ProgressBar(std::string label, int64_t total, std::FILE* out, bool tty)
    : label_(std::move(label)), total_(std::max<int64_t>(total, 1)), out_(out), tty_(tty), start_ms_(now_ms()) {}

void ProgressBar::finish() {
    if (drawn_) std::fputc('\n', out_);
    drawn_ = false;
}

void ProgressBar::update(int64_t done) {
    done = std::clamp<int64_t>(done, 0, total_);
    if (!tty_) {
        const int tenth = int(done * 10 / total_);
        if (tenth <= last_tenth_) return;
        last_tenth_ = tenth;
        const double spent_s = (now_ms() - start_ms_) / 1000;
        const double left_s = spent_s * double(total_ - done) / double(done);
        std::fprintf(out_, "%s: %lld/%lld (%d%%), %.0f s spent, about %.0f s left\n", label_.c_str(), (long long)done,
                     (long long)total_, int(done * 100 / total_), spent_s, left_s);
        std::fflush(out_);
        return;
    }
    constexpr int kWidth = 30;
    const int filled = int(done * kWidth / total_);
    std::fprintf(out_, "\r  %-22s [%s%s] %lld/%lld", label_.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), (long long)done, (long long)total_);
    std::fflush(out_);
    drawn_ = true;
}

}  // namespace lazyattn
