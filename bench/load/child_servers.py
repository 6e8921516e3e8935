"""Servers a benchmark script starts die with it.

popen() starts a server that the kernel sends SIGTERM when the script dies, however it dies
(PR_SET_PDEATHSIG: even SIGKILL, even a crash); install() makes SIGTERM and SIGINT stop every such
server, wait for it, and exit 128+signal at once (no benchmark thread is waited for); stop_all() at
exit covers errors. A `timeout 60 python3 bench/peer/http_rag_compare.py ...` therefore leaves no
llama-server or lazyattn serve behind.
"""
import atexit
import ctypes
import os
import signal
import subprocess
import sys

_children = []
_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the signal handlers and atexit still stop it
        pass


def popen(cmd, **kwargs):
    """subprocess.Popen(cmd) whose process is stopped with this script."""
    proc = subprocess.Popen(cmd, preexec_fn=_die_with_parent, **kwargs)
    _children.append(proc)
    return proc


def stop(proc, timeout_s=30):
    """SIGTERM, then SIGKILL after timeout_s; returns the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def stop_all(timeout_s=10):
    for proc in _children:
        stop(proc, timeout_s)


def _on_signal(signum, _frame):
    stop_all()
    name = signal.Signals(signum).name
    print("%s: %s: stopped %d server(s); exiting" % (os.path.basename(sys.argv[0]), name, len(_children)),
          file=sys.stderr, flush=True)
    os._exit(128 + signum)


def install():
    """Stop every server started with popen() on SIGTERM, SIGINT and at exit."""
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    atexit.register(stop_all)
