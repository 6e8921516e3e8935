// ProgressBar: the one progress display of long commands (demo, benchmarks). Drawn in place on
// stderr only when stderr is a terminal; in logs and pipes it stays silent (the command's own
// result lines say what happened).
#pragma once

#include <cstdint>
#include <string>

namespace lazyattn {

class ProgressBar {
public:
    ProgressBar(std::string label, int64_t total);
    ~ProgressBar() { finish(); }
    void update(int64_t done);
    // Ends the bar's line (if anything was drawn), so what is printed next starts a line of its own.
    void finish();

private:
    std::string label_;
    int64_t total_;
    bool tty_;
    bool drawn_ = false;
};

}  // namespace lazyattn
