#!/usr/bin/env python3
"""Issue 63's steady-state report from the `bench rag --rate R --json` runs that
bench/issue63_steady.sh writes into one directory per arrival rate:

  forming.json                balanced on a fresh store, in --windows spans of its own time
  round1_lazy.json, round1_balanced.json, ...   the same stream, lazy then balanced, on that store

For forming: per span, the share of document lookups the conditioned copies served, the
background rows computed, TTFT p50 and p99 and time per output token p50 of the requests
submitted in it, and completions per second. For the rounds: each round's lazy and balanced side
by side (TTFT p50 and p99, TPOT p50, req/s, the share balanced's copies served) and their ratios;
then the geometric mean of the rounds' ratios against the issue's targets (balanced's TTFT p50
<= 1.15x lazy's, req/s >= 0.9x). A round's two runs are minutes apart on the same stream, so its
ratio cancels most of a shared host's drift; the spread of the rounds says how much is left.

    python3 bench/steady_report.py "0.6 S=bench/out/steady_0.6" ["0.9 S=bench/out/steady_0.9"] \\
        [--markdown out.md] [--plot docs/img/steady_state.png]
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re

TTFT_TARGET = 1.15  # balanced's TTFT p50 at most this times lazy's
THROUGHPUT_TARGET = 0.9  # balanced's completions per second at least this times lazy's


def read_run(path):
    with open(path) as f:
        return json.load(f)["runs"][0]


def ratio(a, b):
    return a / b if b > 0 else float("inf")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs and all(x > 0 for x in xs) else float("nan")


def share(run):
    c = run.get("conditioned", {})
    return ratio(c.get("served", 0), c["lookups"]) if c.get("lookups") else 0.0


def read_dir(directory):
    """(forming run or None, [(round number, lazy run, balanced run)] in round order)."""
    forming_path = os.path.join(directory, "forming.json")
    forming = read_run(forming_path) if os.path.exists(forming_path) else None
    rounds = []
    for path in glob.glob(os.path.join(directory, "round*_lazy.json")):
        n = int(re.search(r"round(\d+)_lazy\.json$", path).group(1))
        balanced = os.path.join(directory, f"round{n}_balanced.json")
        if os.path.exists(balanced):  # a round cut before its balanced run is left out
            rounds.append((n, read_run(path), read_run(balanced)))
    return forming, sorted(rounds, key=lambda r: r[0])


def forming_table(run):
    lines = [f"forming (balanced on a fresh store, {run['measured_requests']} measured requests):", "",
             "| span (s) | conditioned share | background rows | TTFT p50 ms | TTFT p99 ms | TPOT p50 ms "
             "| completions/s |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for w in run["windows"]:
        lines.append(f"| {w['start_s']:.0f}-{w['end_s']:.0f} | {100 * w['conditioned_share']:.0f}% "
                     f"| {w.get('background_rows', '-')} | {w['ttft_p50_ms']:.0f} | {w['ttft_p99_ms']:.0f} "
                     f"| {w.get('tpot_p50_ms', 0):.1f} | {w['completed_per_s']:.3f} |")
    c = run.get("conditioned", {})
    lines += ["", f"copies made {c.get('background_done', 0)}, jobs cancelled {c.get('background_cancelled', 0)}, "
                  f"refused {c.get('background_refused', 0)}, background rows {c.get('background_rows', 0)}"]
    return "\n".join(lines)


def tpot_p50(run):
    w = run.get("windows") or [{}]
    return w[0].get("tpot_p50_ms", 0.0)


def rounds_table(label, rounds):
    """The markdown of the rounds and the verdict line."""
    lines = ["| round | TTFT p50 ms lazy / balanced | ratio | TTFT p99 ms lazy / balanced | TPOT p50 ms lazy / balanced "
             "| req/s lazy / balanced | ratio | conditioned share |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    p50s, thrs = [], []
    for n, lazy, balanced in rounds:
        p50 = ratio(balanced["ttft_p50_ms"], lazy["ttft_p50_ms"])
        thr = ratio(balanced["requests_per_s"], lazy["requests_per_s"])
        p50s.append(p50)
        thrs.append(thr)
        lines.append(f"| {n} | {lazy['ttft_p50_ms']:.0f} / {balanced['ttft_p50_ms']:.0f} | {p50:.2f}x "
                     f"| {lazy['ttft_p99_ms']:.0f} / {balanced['ttft_p99_ms']:.0f} "
                     f"| {tpot_p50(lazy):.1f} / {tpot_p50(balanced):.1f} "
                     f"| {lazy['requests_per_s']:.3f} / {balanced['requests_per_s']:.3f} | {thr:.2f}x "
                     f"| {100 * share(balanced):.0f}% |")
    p50, thr = geomean(p50s), geomean(thrs)
    verdict = (f"{label}, steady state over {len(rounds)} rounds (geometric mean, range): TTFT p50 {p50:.2f}x "
               f"lazy's ({min(p50s):.2f}-{max(p50s):.2f}; target <= {TTFT_TARGET}x: "
               f"{'met' if p50 <= TTFT_TARGET else 'missed'}), req/s {thr:.2f}x ({min(thrs):.2f}-{max(thrs):.2f}; "
               f"target >= {THROUGHPUT_TARGET}x: {'met' if thr >= THROUGHPUT_TARGET else 'missed'})")
    return "\n".join(lines), verdict


def plot(sets, path):
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    formed = [(label, f) for label, f, _ in sets if f]
    rounds_of = [(label, r) for label, _, r in sets if r]
    fig, axes = plt.subplots(1, 2 + bool(formed), figsize=(4.4 * (2 + bool(formed)), 3.8), squeeze=False)
    axes = list(axes[0])
    if formed:
        ax = axes.pop(0)
        for label, forming in formed:
            mid = [(w["start_s"] + w["end_s"]) / 2 for w in forming["windows"]]
            ax.plot(mid, [100 * w["conditioned_share"] for w in forming["windows"]], "o-", label=label)
        ax.set(title="forming: lookups served by conditioned copies", xlabel="seconds into the run", ylabel="%",
               ylim=(0, 100))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    # Each set's balanced/lazy ratio per round: the rounds' absolute times drift with the host.
    for label, rounds in rounds_of:
        xs = [n for n, _, _ in rounds]
        axes[0].plot(xs, [ratio(b["ttft_p50_ms"], lz["ttft_p50_ms"]) for _, lz, b in rounds], "o-", label=label)
        axes[1].plot(xs, [ratio(b["requests_per_s"], lz["requests_per_s"]) for _, lz, b in rounds], "o-",
                     label=label)
    axes[0].axhline(TTFT_TARGET, color="red", linestyle=":", label=f"target <= {TTFT_TARGET}x")
    axes[1].axhline(THROUGHPUT_TARGET, color="red", linestyle=":", label=f"target >= {THROUGHPUT_TARGET}x")
    axes[0].set(title="steady state: balanced TTFT p50 / lazy's", xlabel="round", ylabel="ratio", yscale="log")
    axes[1].set(title="steady state: balanced req/s / lazy's", xlabel="round", ylabel="ratio")
    for ax in axes:
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets", nargs="+", help="LABEL=DIRECTORY (bench/issue63_steady.sh's runs of one rate)")
    ap.add_argument("--markdown", help="write the tables and verdicts here too")
    ap.add_argument("--plot", help="draw the forming share and the rounds into this PNG (needs matplotlib)")
    a = ap.parse_args(argv)
    sets, texts, verdicts = [], [], []
    for s in a.sets:
        label, _, directory = s.partition("=")
        if not directory or not os.path.isdir(directory):
            ap.error(f"'{s}': give LABEL=DIRECTORY")
        forming, rounds = read_dir(directory)
        if forming is None and not rounds:
            ap.error(f"'{s}': no forming.json and no whole round in {directory}")
        parts = [f"**{label}**"]
        if forming:
            parts.append(forming_table(forming))
        if rounds:
            table, verdict = rounds_table(label, rounds)
            parts.append(f"steady state, {rounds[0][1]['measured_requests']} measured requests a run:\n\n" + table)
            verdicts.append(verdict)
        texts.append("\n\n".join(parts))
        sets.append((label, forming, rounds))
    out = "\n\n".join(texts) + ("\n\n" + "\n".join(verdicts) if verdicts else "")
    print(out)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(out + "\n")
    if a.plot:
        plot(sets, a.plot)


if __name__ == "__main__":
    main()
