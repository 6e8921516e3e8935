#!/usr/bin/env python3
"""Issue 63's steady-state report from `bench rag --rate R --windows N --json` runs of plain lazy
and of balanced on the same stream (bench/issue63_steady.sh writes them): per span of each run's
own time, the share of document lookups the conditioned copies served, TTFT p50 and p99 and
time per output token p50 of the requests submitted in the span, completions per second, lazy
beside balanced, and the background rows balanced computed in the span; then the whole
measured run of each, and the last span's ratios against the issue's targets (balanced's TTFT p50
<= 1.15x lazy's, completions >= 0.9x).

    python3 bench/steady_report.py "0.6 S=bench/out/steady_lazy.json,bench/out/steady_balanced.json" \\
        ["0.9 S=LAZY.json,BALANCED.json"] [--markdown out.md] [--plot docs/img/steady_state.png]

Each argument is one pair, its label before '='. Markdown tables on stdout.
"""
from __future__ import annotations

import argparse
import json

TTFT_TARGET = 1.15  # balanced's TTFT p50 at most this times lazy's
THROUGHPUT_TARGET = 0.9  # balanced's completions per second at least this times lazy's


def read_run(path):
    with open(path) as f:
        return json.load(f)["runs"][0]


def ratio(a, b):
    return a / b if b > 0 else float("inf")


def pair_tables(label, lazy, balanced):
    """The markdown of one pair and its verdict line."""
    lines = [f"**{label}**: {lazy['measured_requests']} measured requests a run", "",
             "| span | conditioned share | TTFT p50 ms lazy / balanced | TTFT p99 ms lazy / balanced "
             "| TPOT p50 ms lazy / balanced | completions/s lazy / balanced | background rows |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for i, (l, b) in enumerate(zip(lazy["windows"], balanced["windows"])):
        lines.append(f"| {i + 1} | {100 * b['conditioned_share']:.0f}% | {l['ttft_p50_ms']:.0f} / {b['ttft_p50_ms']:.0f} "
                     f"| {l['ttft_p99_ms']:.0f} / {b['ttft_p99_ms']:.0f} "
                     f"| {l.get('tpot_p50_ms', 0):.1f} / {b.get('tpot_p50_ms', 0):.1f} "
                     f"| {l['completed_per_s']:.3f} / {b['completed_per_s']:.3f} | {b.get('background_rows', '-')} |")
    lines += ["", "| run | TTFT p50 ms | p99 | req/s | copies made / jobs cancelled / refused | background rows |",
              "|---|---:|---:|---:|---:|---:|"]
    for name, r in (("lazy", lazy), ("balanced", balanced)):
        c = r.get("conditioned", {})
        work = (f"{c['background_done']} / {c['background_cancelled']} / {c['background_refused']} "
                f"| {c['background_rows']}") if c.get("background_rows") else "- | -"
        lines.append(f"| {name} | {r['ttft_p50_ms']:.0f} | {r['ttft_p99_ms']:.0f} | {r['requests_per_s']:.3f} | {work} |")
    last_l, last_b = lazy["windows"][-1], balanced["windows"][-1]
    p50 = ratio(last_b["ttft_p50_ms"], last_l["ttft_p50_ms"])
    thr = ratio(last_b["completed_per_s"], last_l["completed_per_s"])
    verdict = (f"{label}, last span: TTFT p50 {p50:.2f}x lazy's (target <= {TTFT_TARGET}x: "
               f"{'met' if p50 <= TTFT_TARGET else 'missed'}), completions {thr:.2f}x (target >= "
               f"{THROUGHPUT_TARGET}x: {'met' if thr >= THROUGHPUT_TARGET else 'missed'}), conditioned share "
               f"{100 * last_b['conditioned_share']:.0f}%, TPOT p50 "
               f"{ratio(last_b.get('tpot_p50_ms', 0), last_l.get('tpot_p50_ms', 0)):.2f}x; whole run: TTFT p50 "
               f"{ratio(balanced['ttft_p50_ms'], lazy['ttft_p50_ms']):.2f}x, p99 "
               f"{ratio(balanced['ttft_p99_ms'], lazy['ttft_p99_ms']):.2f}x, req/s "
               f"{ratio(balanced['requests_per_s'], lazy['requests_per_s']):.2f}x")
    return "\n".join(lines), verdict


def plot(pairs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for label, lazy, balanced in pairs:
        mid = [(w["start_s"] + w["end_s"]) / 2 for w in balanced["windows"]]
        mid_l = [(w["start_s"] + w["end_s"]) / 2 for w in lazy["windows"]]
        axes[0].plot(mid, [100 * w["conditioned_share"] for w in balanced["windows"]], "o-", label=label)
        line, = axes[1].plot(mid, [w["ttft_p50_ms"] for w in balanced["windows"]], "o-",
                             label=f"{label} balanced")
        axes[1].plot(mid_l, [w["ttft_p50_ms"] for w in lazy["windows"]], "s--", color=line.get_color(),
                     alpha=0.6, label=f"{label} lazy")
        line, = axes[2].plot(mid, [w["completed_per_s"] for w in balanced["windows"]], "o-",
                             label=f"{label} balanced")
        axes[2].plot(mid_l, [w["completed_per_s"] for w in lazy["windows"]], "s--", color=line.get_color(),
                     alpha=0.6, label=f"{label} lazy")
    axes[0].set(title="lookups served by conditioned copies", xlabel="seconds into the run", ylabel="%",
                ylim=(0, 100))
    axes[1].set(title="TTFT p50 per span", xlabel="seconds into the run", ylabel="ms")
    axes[2].set(title="completions per second per span", xlabel="seconds into the run", ylabel="req/s")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="+", help="LABEL=LAZY.json,BALANCED.json")
    ap.add_argument("--markdown", help="write the tables and verdicts here too")
    ap.add_argument("--plot", help="draw share, TTFT p50 and completions per span into this PNG (needs matplotlib)")
    a = ap.parse_args(argv)
    pairs, texts, verdicts = [], [], []
    for p in a.pairs:
        label, _, files = p.partition("=")
        lazy_path, _, balanced_path = files.partition(",")
        if not balanced_path:
            ap.error(f"'{p}': give LABEL=LAZY.json,BALANCED.json")
        lazy, balanced = read_run(lazy_path), read_run(balanced_path)
        if not lazy.get("windows") or len(lazy["windows"]) != len(balanced.get("windows", [])):
            ap.error(f"'{p}': both runs need the same --windows")
        text, verdict = pair_tables(label, lazy, balanced)
        pairs.append((label, lazy, balanced))
        texts.append(text)
        verdicts.append(verdict)
    out = "\n\n".join(texts) + "\n\n" + "\n".join(verdicts)
    print(out)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(out + "\n")
    if a.plot:
        plot(pairs, a.plot)


if __name__ == "__main__":
    main()
