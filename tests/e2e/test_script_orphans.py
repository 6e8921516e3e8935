#!/usr/bin/env python3
"""A benchmark script killed mid-run leaves no server behind.

Starts bench/peer/http_rag_compare.py (lazyattn serve on a synthetic model, no llama-server),
waits until its server is up, sends the script SIGTERM (as `timeout` does), and checks that the
script exits at once and that the server it started is gone. Then the same with SIGKILL: the
server dies with its parent (PR_SET_PDEATHSIG). Also checks that a missing llama-server is named
before anything runs.

    python3 tests/e2e/test_script_orphans.py BUILD/lazyattn
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMPARE = os.path.join(ROOT, "bench", "peer", "http_rag_compare.py")


def children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:  # a zombie is dead
        return f.read().split(")")[-1].split()[0] != "Z"


def run_and_kill(lazyattn, workload, tmp, sig):
    cmd = [sys.executable, COMPARE, "--workload", workload, "--model", "synthetic:tiny", "--lazyattn", lazyattn,
           "--warmup", "2", "--requests", "4", "--llama", "--logs", tmp]
    script = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    servers = []
    while time.time() < deadline and not servers:
        servers = children(script.pid)
        time.sleep(0.2)
    assert servers, "the script started no server"
    time.sleep(1.0)  # mid-run: the server is loading or serving
    script.send_signal(sig)
    try:
        script.wait(timeout=30)
    except subprocess.TimeoutExpired:
        script.kill()
        raise AssertionError("the script did not exit within 30 s of %s" % sig.name)
    deadline = time.time() + 15
    while time.time() < deadline and any(alive(p) for p in servers):
        time.sleep(0.2)
    left = [p for p in servers if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, "%s left server(s) running: %s" % (sig.name, left)
    print("%s: script exited %d, its server %s gone" % (sig.name, script.returncode, servers))


def main():
    lazyattn = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        workload = os.path.join(tmp, "stream.json")
        subprocess.run([lazyattn, "bench", "rag", "--model", "synthetic:tiny", "--docs", "6", "--doc-tokens", "32",
                        "--k", "2", "--requests", "8", "--warmup-requests", "2", "--modes", "lazy", "--no-floor",
                        "--threads", "2", "--export-workload", workload], check=True, capture_output=True)
        # Inputs checked before minutes are spent: no llama-server is named at once.
        env = dict(os.environ, LLAMA_TOOLS_BIN="")
        r = subprocess.run([sys.executable, COMPARE, "--workload", workload, "--model", "synthetic:tiny",
                            "--lazyattn", lazyattn], capture_output=True, text=True, env=env, timeout=30)
        assert r.returncode != 0 and "LLAMA_TOOLS_BIN" in r.stderr and "build_llama_tools.sh --env" in r.stderr, r
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
            run_and_kill(lazyattn, workload, tmp, sig)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
