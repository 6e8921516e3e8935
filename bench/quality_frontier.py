#!/usr/bin/env python3
"""Accuracy against TTFT: `lazyattn bench quality --json` runs of the same questions (same
--seed and --questions, any split of the variants over runs) joined question by question, and
optionally `lazyattn bench rag --json` runs for each variant's TTFT p50 relative to `lazy`.

    python3 bench/quality_frontier.py --quality a.json b.json [--rag rag.json ...] \
        [--rag-store rag_store.json ...] [--alias prefix=none] [--markdown out.md] [--plot out.png]

Prints (and writes with --markdown) one table: per variant, accuracy with its 95% Wilson
interval, per family, the share of the none - lazy gap it recovers, McNemar's exact p against
lazy and against none, the TTFT ratio when measured, and whether it is on the Pareto frontier
(no other variant is at least as accurate at no more TTFT, and better in one). A variant run in
several files must answer the same there (a changed engine would not); the first is kept and a
disagreement is reported.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proportions import mcnemar_p, wilson  # noqa: E402


def join_quality(paths):
    """question text -> {family, correct: {variant: bool}}, in the first file's order."""
    questions, order, notes = {}, [], []
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        # By position as well: a suite can ask one question twice over other documents.
        for i, q in enumerate(data["questions"]):
            key = f"{i}\0" + q["question"] + "\0" + json.dumps(q.get("answers"))
            if key not in questions:
                questions[key] = {"family": q["family"], "correct": {}}
                order.append(key)
            have = questions[key]["correct"]
            for v, ok in q["correct"].items():
                if v in have and have[v] != ok:
                    notes.append(f"{v} answers differently in {path}: {q['question'][:60]}")
                have.setdefault(v, ok)
    return [questions[k] for k in order], notes


def ttft_ratios(paths):
    """variant -> TTFT p50 over the p50 of `lazy` in the same run (each file must have `lazy`:
    hosts and days differ, ratios within one run do not); a variant in several files keeps the
    first."""
    ratios = {}
    for path in paths:
        with open(path) as f:
            runs = {run["label"]: run["ttft_p50_ms"] for run in json.load(f)["runs"]}
        if not runs.get("lazy"):
            sys.exit(f"error: {path} has no lazy run to measure the others against")
        for v, t in runs.items():
            ratios.setdefault(v, t / runs["lazy"])
    return ratios


def summarize(questions, variants, ratios, store_ratios):
    rows = []
    families = sorted({q["family"] for q in questions})

    def only(a, b):
        both = [q for q in questions if a in q["correct"] and b in q["correct"]]
        return (sum(q["correct"][a] and not q["correct"][b] for q in both),
                sum(q["correct"][b] and not q["correct"][a] for q in both))

    def acc(v, family=None):
        qs = [q for q in questions if v in q["correct"] and (family is None or q["family"] == family)]
        return sum(q["correct"][v] for q in qs), len(qs)

    k_none, n_none = acc("none")
    k_lazy, n_lazy = acc("lazy")
    gap = (k_none / n_none - k_lazy / n_lazy) if n_none and n_lazy else None
    for v in variants:
        k, n = acc(v)
        row = {"variant": v, "n": n, "accuracy": k / n, "ci": wilson(k, n),
               "families": {f: acc(v, f) for f in families}, "ttft": ratios.get(v),
               "ttft_store": store_ratios.get(v)}
        row["gap_share"] = (k / n - k_lazy / n_lazy) / gap if gap else None
        for ref in ("lazy", "none"):
            compared = v != ref and acc(ref)[1] > 0
            a, b = only(v, ref) if compared else (0, 0)
            row[f"p_{ref}"] = mcnemar_p(a, b) if compared else None
            row[f"only_{ref}"] = (a, b)
        rows.append(row)
    timed = [r for r in rows if r["ttft"] is not None]
    for r in timed:
        r["pareto"] = not any(o is not r and o["ttft"] <= r["ttft"] and o["accuracy"] >= r["accuracy"] and
                              (o["ttft"] < r["ttft"] or o["accuracy"] > r["accuracy"]) for o in timed)
    return rows, families


def markdown(rows, families):
    head = ["variant", "n", "accuracy % [95%]"] + families + ["gap recovered", "vs lazy p (only/only)",
                                                               "vs none p (only/only)", "TTFT p50 vs lazy",
                                                               "same, copies in the store", "Pareto"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for r in rows:
        fam = [f"{100 * k / n:.1f}" if n else "-" for k, n in (r["families"][f] for f in families)]

        def p(ref):
            if r[f"p_{ref}"] is None:
                return "-"
            a, b = r[f"only_{ref}"]
            return f"{r[f'p_{ref}']:.3g} ({a}/{b})"

        out.append("| " + " | ".join(
            [r["variant"], str(r["n"]),
             f"{100 * r['accuracy']:.1f} [{100 * r['ci'][0]:.1f}, {100 * r['ci'][1]:.1f}]"] + fam +
            [f"{100 * r['gap_share']:.0f}%" if r["gap_share"] is not None else "-", p("lazy"), p("none"),
             f"{r['ttft']:.2f}x" if r["ttft"] is not None else "-",
             f"{r['ttft_store']:.2f}x" if r["ttft_store"] is not None else "-",
             ("yes" if r.get("pareto") else "") if r["ttft"] is not None else "-"]) + " |")
    return "\n".join(out) + "\n"


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    timed = sorted([r for r in rows if r["ttft"] is not None], key=lambda r: r["ttft"])
    if not timed:
        return
    fig, ax = plt.subplots(figsize=(8, 5))
    for r in timed:
        lo, hi = r["ci"]
        y = 100 * r["accuracy"]
        ax.errorbar(r["ttft"], y, yerr=[[y - 100 * lo], [100 * hi - y]], fmt="o",
                    color="tab:red" if r.get("pareto") else "tab:gray", capsize=3)
        ax.annotate(r["variant"].replace("lazy:", ""), (r["ttft"], y), textcoords="offset points",
                    xytext=(5, 4), fontsize=7)
    front = [r for r in timed if r.get("pareto")]
    ax.plot([r["ttft"] for r in front], [100 * r["accuracy"] for r in front], "-", color="tab:red", alpha=0.6,
            label="Pareto frontier")
    ax.set_xscale("log")
    ax.set_xlabel("TTFT p50 relative to lazy (log scale)")
    ax.set_ylabel("accuracy % (95% Wilson interval)")
    ax.set_title("Answer accuracy against time to first token")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=130)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quality", nargs="+", required=True)
    ap.add_argument("--rag", nargs="*", default=[], help="bench rag --json runs, each with a lazy run")
    ap.add_argument("--rag-store", nargs="*", default=[],
                    help="bench rag --json runs whose document copies were all in the store (a second pass "
                         "over a --kv-store a first pass filled): a column of their own")
    ap.add_argument("--alias", nargs="*", default=[], metavar="A=B",
                    help="variant A answers as B (prefix=none: both compute full causal attention)")
    ap.add_argument("--variants", nargs="*", help="these, in this order (default: all, as first seen)")
    ap.add_argument("--markdown")
    ap.add_argument("--plot")
    args = ap.parse_args()
    questions, notes = join_quality(args.quality)
    for alias in args.alias:
        a, _, b = alias.partition("=")
        for q in questions:
            if b in q["correct"]:
                q["correct"].setdefault(a, q["correct"][b])
    seen = []
    for q in questions:
        for v in q["correct"]:
            if v not in seen:
                seen.append(v)
    variants = args.variants or seen
    missing = [v for v in variants if v not in seen]
    if missing:
        sys.exit(f"error: no run has the variant(s) {', '.join(missing)}")
    rows, families = summarize(questions, variants, ttft_ratios(args.rag), ttft_ratios(args.rag_store))
    table = markdown(rows, families)
    print(table)
    for n in notes:
        print("note:", n, file=sys.stderr)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
