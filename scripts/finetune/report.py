#!/usr/bin/env python3
"""The evaluation report of a block fine-tune: `bench quality` JSONs of the base and the
fine-tuned model, compared question by question across models.

bench quality compares variants within one model's run; the recipe's questions are across
models (the fine-tuned model's lazy against the base model's none and lazy), so this pairs the
per-question results of two runs of the same questions (same seed, same data). Questions the
fine-tune trained on (the 2Wiki train part, from the run's data/summary.json) are left out;
everything else of the 500 is held out by construction (synthetic questions from other seeds).

Accuracy with Wilson 95% intervals; paired difference with its 95% interval and McNemar's exact
p (as src/bench/proportions.cpp); the share of the base model's none - lazy gap that the
fine-tuned model's lazy recovers; the share of questions whose reply (greedy) equals the base
model's none reply, for each variant.

  report.py --base base.json --tuned tuned.json --summary OUT/data/summary.json [--json OUT.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
from proportions import mcnemar_p, wilson  # noqa: E402


def paired(a, b):
    n = len(a)
    oa = sum(1 for x, y in zip(a, b) if x and not y)
    ob = sum(1 for x, y in zip(a, b) if y and not x)
    d = (oa - ob) / n
    var = max(0.0, (oa + ob) / n - d * d)
    h = 1.96 * math.sqrt(var / n)
    return {"difference": d, "ci": [d - h, d + h], "p": mcnemar_p(oa, ob), "only_a": oa, "only_b": ob}


def load(path, exclude):
    with open(path) as f:
        d = json.load(f)
    qs = [q for q in d["questions"] if q["question"] not in exclude]
    return d, qs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="bench quality JSON of the base model (none, lazy)")
    ap.add_argument("--tuned", required=True, help="bench quality JSON of the fine-tuned model")
    ap.add_argument("--summary", required=True, help="the fine-tune's data/summary.json")
    ap.add_argument("--json", help="write the numbers here")
    a = ap.parse_args()
    with open(a.summary) as f:
        summary = json.load(f)
    exclude = set(summary["wiki_train_questions"])
    bd, bq = load(a.base, exclude)
    td, tq = load(a.tuned, exclude)
    if [q["question"] for q in bq] != [q["question"] for q in tq]:
        raise SystemExit("error: the two runs did not ask the same questions (same --seed, --questions, data?)")
    cols = {f"base {v}": [q["correct"][v] for q in bq] for v in bd["variants"]}
    cols.update({f"tuned {v}": [q["correct"][v] for q in tq] for v in td["variants"]})
    n = len(bq)
    fam = [q["family"] for q in bq]
    out = {"n": n, "excluded_trained_on": len(bd["questions"]) - n, "accuracy": {}, "paired": [], "by_family": {}}
    print(f"{n} held-out questions ({out['excluded_trained_on']} trained-on 2Wiki questions left out)\n")
    print("| model, variant | accuracy % [95% Wilson] |")
    print("|---|---:|")
    for name, c in cols.items():
        k = sum(c)
        lo, hi = wilson(k, n)
        out["accuracy"][name] = {"correct": k, "accuracy": k / n, "ci": [lo, hi]}
        print(f"| {name} | {100 * k / n:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] |")
    families = sorted(set(fam))
    print("\n| family | n | " + " | ".join(cols) + " |")
    print("|---|---:|" + "---:|" * len(cols))
    for f_ in families:
        idx = [i for i, x in enumerate(fam) if x == f_]
        row = []
        for name, c in cols.items():
            k = sum(c[i] for i in idx)
            row.append(f"{100 * k / len(idx):.1f}")
            out["by_family"].setdefault(f_, {})[name] = k / len(idx)
        print(f"| {f_} | {len(idx)} | " + " | ".join(row) + " |")
    pairs = [(a_, b_) for a_, b_ in [("tuned lazy", "base lazy"), ("tuned lazy", "base none"),
                                       ("tuned none", "base none"), ("tuned lazy:anchor", "base lazy"),
                                       ("tuned lazy:anchor", "base none"), ("tuned lazy", "tuned none"),
                                       ("base lazy", "base none")]
             if a_ in cols and b_ in cols]
    print("\n| variant | vs | difference, points [95%] | McNemar p | only variant / only reference |")
    print("|---|---|---:|---:|---:|")
    for x, y in pairs:
        p = paired(cols[x], cols[y])
        out["paired"].append({"variant": x, "reference": y, **p})
        print(f"| {x} | {y} | {100 * p['difference']:+.1f} [{100 * p['ci'][0]:+.1f}, {100 * p['ci'][1]:+.1f}] | "
              f"{p['p']:.3g} | {p['only_a']} / {p['only_b']} |")
    if "base none" in cols and "base lazy" in cols:
        acc = {k: sum(v) / n for k, v in cols.items()}
        gap = acc["base none"] - acc["base lazy"]
        print(f"\nbase none - base lazy gap: {100 * gap:.1f} points")
        for v in ("tuned lazy", "tuned lazy:anchor"):
            if v in acc and gap > 0:
                r = (acc[v] - acc["base lazy"]) / gap
                out.setdefault("gap_recovered", {})[v] = r
                print(f"{v} recovers {100 * r:.0f}% of it")
    # Agreement with the base model under full attention: the tuned model's lazy reply (greedy)
    # against the base none reply, string for string, beside the base model's own lazy.
    rep = {f"base {v}": [q["replies"][v].strip() for q in bq] for v in bd["variants"]}
    rep.update({f"tuned {v}": [q["replies"][v].strip() for q in tq] for v in td["variants"]})
    if "base none" in rep:
        print("\n| replies | equal to base none's (greedy) % [95% Wilson] | McNemar p vs base lazy |")
        print("|---|---:|---:|")
        ref = rep["base none"]
        same = {k: [x == y for x, y in zip(v, ref)] for k, v in rep.items() if k != "base none"}
        for k, c in same.items():
            lo, hi = wilson(sum(c), n)
            p = paired(c, same["base lazy"])["p"] if "base lazy" in same and k != "base lazy" else float("nan")
            out.setdefault("same_as_base_none", {})[k] = {"share": sum(c) / n, "ci": [lo, hi], "p_vs_base_lazy": p}
            print(f"| {k} | {100 * sum(c) / n:.1f} [{100 * lo:.1f}, {100 * hi:.1f}] | {p:.3g} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
