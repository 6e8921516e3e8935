#!/usr/bin/env python3
"""Plots for `lazyattn bench rag --json FILE`: TTFT distribution per mode; TTFT p50 (with its 95%
bootstrap interval), TTFT p99 and throughput against KV budget, document skew and Poisson arrival
rate, one line per cache mode (points where a mode could not fit one request are left out); hit
ratio vs pool size. Writes PNGs next to the JSON (or into --out)."""
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
    ax.set_ylabel("fraction of measured requests (warm-up excluded)")
    w = data["workload"]
    ax.set_title(f"TTFT CDF: {w['num_docs']} docs x {w['doc_tokens']} tokens, k={w['k']}, zipf s={w['zipf_s']}, "
                 f"KV budget {w.get('kv_budget_docs', 0):.1f} docs", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "rag_ttft_cdf.png"), dpi=120)


def sweep_plot(rows, x, xlabel, title, path, logx=False):
    """Three panels against x: TTFT p50 with its 95% interval, TTFT p99, throughput."""
    modes = {}
    for r in rows:
        if "refused" not in r:
            modes.setdefault(r["mode"], []).append(r)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for mode, pts in modes.items():
        pts.sort(key=lambda r: r[x])
        xs = [r[x] for r in pts]
        p50 = [r["ttft_p50_ms"] for r in pts]
        err = [[max(0.0, r["ttft_p50_ms"] - r["ttft_p50_ci95_ms"][0]) for r in pts],
               [max(0.0, r["ttft_p50_ci95_ms"][1] - r["ttft_p50_ms"]) for r in pts]]
        color = COLORS.get(mode)
        axes[0].errorbar(xs, p50, yerr=err, fmt="o-", capsize=3, label=mode, color=color)
        axes[1].plot(xs, [r["ttft_p99_ms"] for r in pts], "o-", label=mode, color=color)
        axes[2].plot(xs, [r["requests_per_s"] for r in pts], "o-", label=mode, color=color)
    for ax, ylabel in zip(axes, ("TTFT p50 (ms, 95% CI)", "TTFT p99 (ms)", "throughput (requests/s)")):
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        if logx:
            ax.set_xscale("log")
    axes[0].set_yscale("log")
    axes[1].set_yscale("log")
    axes[0].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


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
    w = data["workload"]
    where = f"{w['num_docs']} docs x {w['doc_tokens']} tokens, k={w['k']}"
    if data.get("budget_sweep"):
        sweep_plot(data["budget_sweep"], "kv_budget_docs", "KV budget (documents' worth, whole pool)",
                   f"against KV budget ({where}, zipf s={w['zipf_s']})", os.path.join(out, "rag_vs_budget.png"))
    if data.get("skew_sweep"):
        sweep_plot(data["skew_sweep"], "zipf_s", "Zipf exponent s (0 = uniform)",
                   f"against document skew ({where}, budget {w.get('kv_budget_docs', 0):.1f} docs)",
                   os.path.join(out, "rag_vs_skew.png"))
    if data.get("rate_sweep"):
        sweep_plot(data["rate_sweep"], "rate", "arrival rate (requests/s, Poisson, open loop)",
                   f"against arrival rate ({where}, budget {w.get('kv_budget_docs', 0):.1f} docs)",
                   os.path.join(out, "rag_vs_rate.png"))
    if data.get("capacity_sweep"):
        capacity_plot(data["capacity_sweep"], os.path.join(out, "rag_hit_ratio_vs_pool.png"))
    print("plots written to", out)


if __name__ == "__main__":
    main()
