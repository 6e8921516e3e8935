#!/usr/bin/env python3
"""bench/steady_report.py on hand-made `bench rag --windows` runs whose every figure is known: the
per-span table (share, TTFT p50/p99, completions), the whole-run rows, the last span's ratios
against issue 63's targets (met at the bounds, missed past them), two pairs at once, and runs of
unequal --windows refused."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../bench/steady_report.py")


def write_run(path, p50s, shares, completed, background=None):
    windows = [{"start_s": 10 * i, "end_s": 10 * (i + 1), "requests": 5, "conditioned_share": shares[i],
                "ttft_p50_ms": p50s[i], "ttft_p99_ms": 3 * p50s[i], "completed_per_s": completed[i],
                "tpot_p50_ms": p50s[i] / 10, "background_rows": 64 * i if background else 0}
               for i in range(len(p50s))]
    run = {"measured_requests": 5 * len(p50s), "windows": windows, "ttft_p50_ms": sum(p50s) / len(p50s),
           "ttft_p99_ms": 3 * max(p50s), "requests_per_s": sum(completed) / len(completed),
           "conditioned": background or {}}
    with open(path, "w") as f:
        json.dump({"runs": [run]}, f)


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as d:
        lazy, balanced, slow = (os.path.join(d, n + ".json") for n in ("lazy", "balanced", "slow"))
        write_run(lazy, [200, 200, 200], [0, 0, 0], [1.0, 1.0, 1.0])
        work = {"background_done": 7, "background_cancelled": 2, "background_refused": 0, "background_rows": 4096}
        # At the bounds: p50 230 = 1.15x, completions 0.9 = 0.9x.
        write_run(balanced, [260, 240, 230], [0, 0.25, 0.5], [0.8, 0.9, 0.9], work)
        r = run("0.6 S=" + lazy + "," + balanced)
        assert r.returncode == 0, r.stderr
        out = r.stdout
        assert "| 2 | 25% | 200 / 240 | 600 / 720 | 20.0 / 24.0 | 1.000 / 0.900 | 64 |" in out, out
        assert "| balanced | 243 | 780 | 0.867 | 7 / 2 / 0 | 4096 |" in out, out
        assert "| lazy | 200 | 600 | 1.000 | - | - |" in out, out
        assert ("0.6 S, last span: TTFT p50 1.15x lazy's (target <= 1.15x: met), completions 0.90x "
                "(target >= 0.9x: met), conditioned share 50%, TPOT p50 1.15x") in out, out
        # Past the bounds, as a second pair in the same report.
        write_run(slow, [300, 300, 300], [0.1, 0.2, 0.3], [0.8, 0.8, 0.8], work)
        out = run("0.6 S=" + lazy + "," + balanced, "0.9 S=" + lazy + "," + slow).stdout
        assert ("0.9 S, last span: TTFT p50 1.50x lazy's (target <= 1.15x: missed), completions 0.80x "
                "(target >= 0.9x: missed)") in out, out
        assert "0.6 S, last span" in out, out
        # Runs of other --windows do not pair.
        write_run(slow, [300, 300], [0.1, 0.2], [0.8, 0.8], work)
        r = run("x=" + lazy + "," + slow)
        assert r.returncode != 0 and "same --windows" in r.stderr, r.stderr
        try:
            import matplotlib  # noqa: F401  (the figure is optional: run_bench.sh installs matplotlib)
        except ImportError:
            print("matplotlib not installed: --plot not tested")
        else:
            png = os.path.join(d, "steady.png")
            assert run("0.6 S=" + lazy + "," + balanced, "--plot", png).returncode == 0
            with open(png, "rb") as f:
                assert f.read(8) == b"\x89PNG\r\n\x1a\n", "not a PNG"
    print("ok")


if __name__ == "__main__":
    main()
