// ProgressBar: the one progress display of long commands (demo, benchmarks, precompute). On a
// terminal, a bar drawn in place on stderr; in logs and pipes, where a redrawn line would be
// noise, one line at each tenth of the work with the time spent and the time left, so a run
// of an hour shows how far it is from its log.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace lazyattn {

class ProgressBar {
public:
    ProgressBar(std::string label, int64_t total);
    // For tests: where to draw, and whether that is a terminal.
    ProgressBar(std::string label, int64_t total, std::FILE* out, bool tty);
    ~ProgressBar() { finish(); }
    void update(int64_t done);
    // Ends the bar's line (if anything was drawn), so what is printed next starts a line of its own.
    void finish();

private:
    std::string label_;
    int64_t total_;
    std::FILE* out_;
    bool tty_;
    bool drawn_ = false;
    int last_tenth_ = 0;  // logs: the last tenth of the work a line was written for
    double start_ms_;
};

}  // namespace lazyattn
