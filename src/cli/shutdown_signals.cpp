#include "cli/shutdown_signals.h"

#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

namespace lazyattn::cli {
namespace {

// The taker's thread id, for the forwarding handler (set before the handler is installed).
pthread_t g_taker;

// Runs only in a thread that does not block the signals (the taker blocks them).
extern "C" void forward_to_taker(int sig) { pthread_kill(g_taker, sig); }

sigset_t shutdown_set() {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    return set;
}

}  // namespace

ShutdownSignals::ShutdownSignals() {
    const sigset_t set = shutdown_set();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    taker_ = std::thread([this] { take(); });
    g_taker = taker_.native_handle();
    struct sigaction forward {};
    forward.sa_handler = forward_to_taker;
    sigemptyset(&forward.sa_mask);
    forward.sa_flags = SA_RESTART;
    sigaction(SIGINT, &forward, nullptr);
    sigaction(SIGTERM, &forward, nullptr);
}

ShutdownSignals::~ShutdownSignals() {
    // The taker waits in sigwait(): a SIGTERM to ourselves, taken once serving, ends it.
    bool taken = false;
    {
        std::lock_guard<std::mutex> lock(mu_);
        serving_ = true;
        taken = signal_ != 0;
    }
    if (!taken) pthread_kill(taker_.native_handle(), SIGTERM);
    taker_.join();
}

void ShutdownSignals::take() {
    const sigset_t set = shutdown_set();
    int sig = 0;
    while (sigwait(&set, &sig) != 0) {
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (!serving_) {
        // Nothing runs yet that a drain would wait for; start-up may be blocked anywhere.
        static const char kMessage[] = "lazyattn serve: stopped by a signal during start-up\n";
        (void)!::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
        std::_Exit(128 + sig);
    }
    signal_ = sig;
    cv_.notify_all();
}

void ShutdownSignals::serving() {
    std::lock_guard<std::mutex> lock(mu_);
    serving_ = true;
}

int ShutdownSignals::wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return signal_ != 0; });
    return signal_;
}

}  // namespace lazyattn::cli
