#!/usr/bin/env python3
"""bench/steady_report.py on hand-made `bench rag` runs whose every figure is known: the forming
run's spans (share, background rows, TTFT, TPOT, completions), each round's lazy and balanced with
their ratios, the geometric mean of the rounds against issue 63's targets (met at the bounds,
missed past them), a round cut before its balanced run left out, two rates at once, and a
directory with no runs refused."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import check_plot  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../bench/steady_report.py")


def write_run(path, p50, req_s, windows=None, served=0, lookups=0, work=None):
    windows = windows or [{"start_s": 0, "end_s": 10, "requests": 5, "conditioned_share": 0, "ttft_p50_ms": p50,
                           "ttft_p99_ms": 3 * p50, "tpot_p50_ms": p50 / 10, "completed_per_s": req_s,
                           "background_rows": 0}]
    conditioned = {"lookups": lookups, "served": served, **(work or {})}
    run = {"measured_requests": 20, "windows": windows, "ttft_p50_ms": p50, "ttft_p99_ms": 3 * p50,
           "requests_per_s": req_s, "conditioned": conditioned}
    with open(path, "w") as f:
        json.dump({"runs": [run]}, f)


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as d:
        six, nine = os.path.join(d, "six"), os.path.join(d, "nine")
        os.makedirs(six)
        os.makedirs(nine)
        spans = [{"start_s": 10 * i, "end_s": 10 * (i + 1), "requests": 5, "conditioned_share": s,
                  "ttft_p50_ms": p, "ttft_p99_ms": 3 * p, "tpot_p50_ms": p / 10, "completed_per_s": 0.5,
                  "background_rows": rows} for i, (s, p, rows) in enumerate([(0.5, 150, 4096), (0.9, 100, 0)])]
        work = {"background_done": 7, "background_cancelled": 2, "background_refused": 0, "background_rows": 4096}
        write_run(os.path.join(six, "forming.json"), 120, 0.5, spans, 70, 100, work)
        # Round 1: 1.10x and 1.0x; round 2: 1.2x and 0.81x: geometric means 1.149x and 0.9x (the bounds).
        write_run(os.path.join(six, "round1_lazy.json"), 100, 1.0)
        write_run(os.path.join(six, "round1_balanced.json"), 110, 1.0, served=90, lookups=100)
        write_run(os.path.join(six, "round2_lazy.json"), 100, 1.0)
        write_run(os.path.join(six, "round2_balanced.json"), 120, 0.81, served=90, lookups=100)
        write_run(os.path.join(six, "round3_lazy.json"), 100, 1.0)  # cut before its balanced run
        r = run("0.6 S=" + six)
        assert r.returncode == 0, r.stderr
        out = r.stdout
        assert "| 0-10 | 50% | 4096 | 150 | 450 | 15.0 | 0.500 |" in out, out
        assert "| 10-20 | 90% | 0 | 100 | 300 | 10.0 | 0.500 |" in out, out
        assert "copies made 7, jobs cancelled 2, refused 0, background rows 4096" in out, out
        assert "| 1 | 100 / 110 | 1.10x | 300 / 330 | 10.0 / 11.0 | 1.000 / 1.000 | 1.00x | 90% |" in out, out
        assert "| 3 |" not in out, out
        assert ("0.6 S, steady state over 2 rounds (geometric mean, range): TTFT p50 1.15x lazy's (1.10-1.20; "
                "target <= 1.15x: met), req/s 0.90x (0.81-1.00; target >= 0.9x: met)") in out, out
        # Past the bounds, as a second rate in the same report (rounds only, no forming run).
        write_run(os.path.join(nine, "round1_lazy.json"), 100, 1.0)
        write_run(os.path.join(nine, "round1_balanced.json"), 130, 0.8, served=90, lookups=100)
        out = run("0.6 S=" + six, "0.9 S=" + nine).stdout
        assert ("0.9 S, steady state over 1 rounds (geometric mean, range): TTFT p50 1.30x lazy's (1.30-1.30; "
                "target <= 1.15x: missed), req/s 0.80x (0.80-0.80; target >= 0.9x: missed)") in out, out
        assert "0.6 S, steady state" in out and "forming" in out, out
        empty = os.path.join(d, "empty")
        os.makedirs(empty)
        r = run("x=" + empty)
        assert r.returncode != 0 and "no forming.json" in r.stderr, r.stderr
        check_plot(SCRIPT, ["0.6 S=" + six, "0.9 S=" + nine], d)
    print("ok")


if __name__ == "__main__":
    main()
