#!/usr/bin/env python3
"""The preset comparison of issue 63 from `bench quality --resume FILE` progress files, complete
or partial: per set and family, the questions every variant of that file has answered, each
variant's accuracy with its 95% Wilson interval, and each variant against the reference (`lazy`,
the `fast` preset) paired question by question (McNemar's exact p; only variant / only
reference), per family, per set and pooled over every set given; the share of the lazy -> none
gap recovered where `none` was run; and the issue's rule for the default: `balanced` becomes it
if it beats fast with p < 0.05 pooled and is significantly worse (p < 0.05) on no family.

    python3 bench/preset_evidence.py 500=bench/out/issue63_500.progress.jsonl \\
        heldout=bench/out/issue63_heldout.progress.jsonl [--markdown out.md]

A set's name is the label before '='. Variants run in only some sets are pooled over those.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proportions import mcnemar_p, wilson  # noqa: E402

REFERENCE = "lazy"
CANDIDATE = "balanced"


def read_progress(path):
    """(variants in the header's order, {question index: {"family", "correct": {variant: bool}}})
    over the questions every variant has answered; a last line cut mid-write is skipped."""
    with open(path) as f:
        lines = f.read().split("\n")
    header = json.loads(lines[0])
    variants = header["arguments"]["variants"]
    questions = {}
    for line in lines[1:]:
        if not line:
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue  # the cut last line
        q = questions.setdefault(r["index"], {"family": r["family"], "correct": {}})
        q["correct"].setdefault(r["variant"], bool(r["correct"]))  # the first answer recorded stays
    whole = {i: q for i, q in sorted(questions.items()) if all(v in q["correct"] for v in variants)}
    return variants, whole


def cell(k, n):
    lo, hi = wilson(k, n)
    return f"{100 * k / n:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]" if n else "-"


def paired(questions, variant, reference):
    only_v = sum(1 for q in questions if q["correct"][variant] and not q["correct"][reference])
    only_r = sum(1 for q in questions if q["correct"][reference] and not q["correct"][variant])
    return only_v, only_r


def compare_cell(only_v, only_r, n):
    if n == 0:
        return "-"
    return f"{100 * (only_v - only_r) / n:+.1f}, p = {mcnemar_p(only_v, only_r):.3g} ({only_v}/{only_r})"


def build(sets):
    """Rows of the table: (set, group, n, {variant: accuracy cell}, {variant: comparison cell}),
    the variants in first-seen order, and the rule's verdict."""
    variants, rows = [], []
    pooled = {}  # variant -> [only_v, only_r, n]
    family_losses = []
    for name, (vs, qs) in sets.items():
        for v in vs:
            if v not in variants:
                variants.append(v)
        groups = {}
        for q in qs.values():
            groups.setdefault(q["family"], []).append(q)
        for group, members in list(sorted(groups.items())) + [("all", list(qs.values()))]:
            if group == "all" and len(groups) < 2:
                continue
            acc, cmp_ = {}, {}
            for v in vs:
                acc[v] = cell(sum(q["correct"][v] for q in members), len(members))
                if REFERENCE in vs and v != REFERENCE:
                    only_v, only_r = paired(members, v, REFERENCE)
                    cmp_[v] = compare_cell(only_v, only_r, len(members))
                    if group != "all":
                        p = pooled.setdefault(v, [0, 0, 0])
                        p[0], p[1], p[2] = p[0] + only_v, p[1] + only_r, p[2] + len(members)
                        if v == CANDIDATE and only_r > only_v and mcnemar_p(only_v, only_r) < 0.05:
                            family_losses.append(f"{name} {group}")
            if "none" in vs and REFERENCE in vs:
                gap = sum(q["correct"]["none"] for q in members) - sum(q["correct"][REFERENCE] for q in members)
                for v in vs:
                    if v not in ("none", REFERENCE) and gap > 0:
                        gained = sum(q["correct"][v] for q in members) - sum(q["correct"][REFERENCE] for q in members)
                        cmp_[v] = cmp_.get(v, "") + f"; {100 * gained / gap:.0f}% of the gap"
            rows.append((name, group, len(members), acc, cmp_))
    verdict = None
    if CANDIDATE in pooled:
        only_v, only_r, n = pooled[CANDIDATE]
        p = mcnemar_p(only_v, only_r)
        beats = only_v > only_r and p < 0.05
        verdict = (f"{CANDIDATE} vs {REFERENCE} pooled over {n} questions: {compare_cell(only_v, only_r, n)}; "
                   f"significantly worse on: {', '.join(family_losses) or 'no family'}. The rule, on these questions: "
                   f"{'met' if beats and not family_losses else 'not met'}")
    return variants, rows, pooled, verdict


def markdown(variants, rows, pooled):
    others = [v for v in variants if v != REFERENCE]
    head = ["set", "group", "n"] + variants + [f"{v} vs {REFERENCE}: points, McNemar p (only/only)" for v in others]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
    for name, group, n, acc, cmp_ in rows:
        cells = [name, group, str(n)] + [acc.get(v, "-") for v in variants] + [cmp_.get(v, "-") for v in others]
        out.append("| " + " | ".join(cells) + " |")
    if len(pooled) and any(r[0] != rows[0][0] for r in rows):
        cells = ["pooled", "every family", str(max(p[2] for p in pooled.values()))] + ["" for _ in variants]
        cells += [compare_cell(*pooled[v]) if v in pooled else "-" for v in others]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets", nargs="+", help="NAME=PROGRESS_FILE")
    ap.add_argument("--markdown", help="write the table (and the verdict) here")
    a = ap.parse_args(argv)
    sets = {}
    for s in a.sets:
        name, _, path = s.partition("=")
        if not path:
            ap.error(f"'{s}': give NAME=PROGRESS_FILE")
        sets[name] = read_progress(path)
    variants, rows, pooled, verdict = build(sets)
    text = markdown(variants, rows, pooled) + ("\n\n" + verdict if verdict else "")
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
