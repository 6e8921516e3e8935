#!/usr/bin/env python3
"""Plots for `lazyattn bench rag --json FILE`: TTFT distribution per mode, TTFT vs arrival rate,
throughput vs skew, hit ratio vs pool size. Writes PNGs next to the JSON (or into --out)."""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLORS = {"lazy": "#d62728", "lazy-k": "#ff7f0e", "block-attn": "#1f77b4", "prefix": "#2ca02c", "none": "#7f7f7f",
          "floor (all cached)": "#9467bd"}


def ttft_distribution(data, out):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for run in data["runs"]:
        v = sorted(run["ttft_ms"])
        ax.step(v, [(i + 1) / len(v) for i in range(len(v))], where="post", label=run["label"],
                color=COLORS.get(run["label"]))
    ax.set_xscale("log")
    ax.set_xlabel("time to first token (ms, log scale)")
    ax.set_ylabel("fraction of requests")
    w = data["workload"]
    ax.set_title(f"TTFT CDF: {w['num_docs']} docs x {w['doc_tokens']} tokens, k={w['k']}, zipf s={w['zipf_s']}")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rag_ttft_cdf.png"), dpi=120)


def by_mode(rows, x, y):
    modes = {}
    for r in rows:
        modes.setdefault(r["mode"], []).append((r[x], r[y]))
    return {m: sorted(v) for m, v in modes.items()}


def line_plot(rows, x, y, xlabel, ylabel, title, path, logy=False):
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for mode, pts in by_mode(rows, x, y).items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=mode, color=COLORS.get(mode))
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def capacity_plot(rows, path):
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for aware, name, color in ((False, "position-agnostic (one copy per document)", "#d62728"),
                               (True, "position-aware (one copy per document and slot)", "#1f77b4")):
        pts = sorted((r["capacity_docs"], r["hit_ratio"], r["analytic_hit_ratio"]) for r in rows if r["position_aware"] == aware)
        ax.plot([p[0] for p in pts], [100 * p[1] for p in pts], "o-", color=color, label=name + ", measured")
        ax.plot([p[0] for p in pts], [100 * p[2] for p in pts], "--", color=color, alpha=0.6,
                label="analytic " + ("H(floor(C/k))" if aware else "H(C)"))
    ax.set_xlabel("KV pool capacity C (documents)")
    ax.set_ylabel("document hit ratio (%)")
    ax.set_title("Hit ratio vs pool size")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    with open(args.json) as f:
        data = json.load(f)
    out = args.out or os.path.dirname(os.path.abspath(args.json))
    os.makedirs(out, exist_ok=True)
    ttft_distribution(data, out)
    if data.get("rate_sweep"):
        line_plot(data["rate_sweep"], "rate", "ttft_p50_ms", "arrival rate (requests/s, Poisson)", "TTFT p50 (ms)",
                  "TTFT vs arrival rate", os.path.join(out, "rag_ttft_vs_rate.png"), logy=True)
    if data.get("skew_sweep"):
        line_plot(data["skew_sweep"], "zipf_s", "requests_per_s", "Zipf exponent s (0 = uniform)", "throughput (requests/s)",
                  "Throughput vs document skew", os.path.join(out, "rag_throughput_vs_skew.png"))
    if data.get("capacity_sweep"):
        capacity_plot(data["capacity_sweep"], os.path.join(out, "rag_hit_ratio_vs_pool.png"))
    print("plots written to", out)


if __name__ == "__main__":
    main()
