#!/usr/bin/env python3
"""The preset comparison of issue 63 from `bench quality --resume FILE` progress files, complete
or partial: per set and family, the questions every variant of that file has answered, each
variant's accuracy with its 95% Wilson interval, and each variant against the reference (`lazy`,
the `fast` preset) paired question by question (McNemar's exact p; only variant / only
reference), per family, per set and pooled over every set given; the share of the lazy -> none
gap recovered where `none` was run; and the issue's rule for the default: `balanced` becomes it
if it beats fast with p < 0.05 pooled and is significantly worse (p < 0.05) on no family.

    python3 bench/preset_evidence.py 500=bench/out/issue63_500.progress.jsonl \\
        attr=bench/out/issue63_heldout.progress.jsonl#attr \\
        bridge=bench/out/issue63_bridge.progress.jsonl [--candidate balanced+damp=16:-2] [--markdown out.md]

A set's name is the label before '='; files joined by '+' are one set (the same questions run
apart, a variant a process), '#FAMILY,...' after the files keeps only those families' questions
(a run cut past the end of the families it was meant for). Variants run in only some
sets are pooled over those; the candidate's share of the gap to full attention is pooled over
the sets that ran `none`.
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


def read_progress(path, families=None):
    """(variants in the header's order, {question index: {"family", "correct": {variant: bool}}})
    over the questions every variant has answered (of `families` only, when given); a last line
    cut mid-write is skipped."""
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
    whole = {i: q for i, q in sorted(questions.items())
             if all(v in q["correct"] for v in variants) and (not families or q["family"] in families)}
    return variants, whole


def read_joined(paths, families=None):
    """read_progress over several files run apart (one variant each, say, one process a core) and
    joined question by question: the variants of every file, in order, over the questions each
    file has answered whole. The files must ask the same questions: a question a second file
    gives another family is an error."""
    variants, joined = [], None
    for path in paths:
        vs, questions = read_progress(path, families)
        variants += [v for v in vs if v not in variants]
        if joined is None:
            joined = questions
            continue
        for i in list(joined):
            if i not in questions:
                del joined[i]
            elif questions[i]["family"] != joined[i]["family"]:
                raise SystemExit(f"{path}: question {i} is {questions[i]['family']}, elsewhere "
                                 f"{joined[i]['family']}: not the same questions")
            else:
                for v, ok in questions[i]["correct"].items():
                    joined[i]["correct"].setdefault(v, ok)
    return variants, joined


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


def build(sets, candidate=CANDIDATE):
    """Rows of the table: (set, group, n, {variant: accuracy cell}, {variant: comparison cell}),
    the variants in first-seen order, and the rule's verdict for `candidate`."""
    variants, rows = [], []
    pooled = {}  # variant -> [only_v, only_r, n]
    family_losses = []
    gap_total = gained_total = 0  # the candidate's, over the families that ran none
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
                        if v == candidate and only_r > only_v and mcnemar_p(only_v, only_r) < 0.05:
                            family_losses.append(f"{name} {group}")
            if "none" in vs and REFERENCE in vs:
                gap = sum(q["correct"]["none"] for q in members) - sum(q["correct"][REFERENCE] for q in members)
                for v in vs:
                    if v in ("none", REFERENCE):
                        continue
                    gained = sum(q["correct"][v] for q in members) - sum(q["correct"][REFERENCE] for q in members)
                    if gap > 0:
                        cmp_[v] = cmp_.get(v, "") + f"; {100 * gained / gap:.0f}% of the gap"
                    if v == candidate and group != "all":  # pooled over every family, a gapless one too
                        gap_total, gained_total = gap_total + gap, gained_total + gained
            rows.append((name, group, len(members), acc, cmp_))
    verdict = None
    if candidate in pooled:
        only_v, only_r, n = pooled[candidate]
        p = mcnemar_p(only_v, only_r)
        beats = only_v > only_r and p < 0.05
        verdict = (f"{candidate} vs {REFERENCE} pooled over {n} questions: {compare_cell(only_v, only_r, n)}; "
                   f"significantly worse on: {', '.join(family_losses) or 'no family'}. The rule, on these questions: "
                   f"{'met' if beats and not family_losses else 'not met'}")
        if gap_total > 0:
            verdict += (f". Gap to full attention where none ran: {candidate} recovers "
                        f"{100 * gained_total / gap_total:.0f}% of it ({gained_total} of {gap_total} questions)")
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


def plot(sets, variants, path, labels=None):
    """Accuracy per set and family (95% Wilson intervals), one bar per variant: the figure of
    docs/benchmarks.md's preset comparison. matplotlib is imported here only (the tables need
    nothing beyond the standard library)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = []  # (label, questions)
    for name, (_, qs) in sets.items():
        by_family = {}
        for q in qs.values():
            by_family.setdefault(q["family"], []).append(q)
        for family, members in sorted(by_family.items()):
            groups.append((family if family == name else f"{name}: {family}", members))
    order = [v for v in ("none", REFERENCE) if v in variants] + [v for v in variants if v not in ("none", REFERENCE)]
    fig, ax = plt.subplots(figsize=(max(7.0, 1.1 * len(groups) + 2), 4.4))
    width = 0.8 / len(order)
    for i, v in enumerate(order):
        xs, ys, lo, hi = [], [], [], []
        for j, (_, members) in enumerate(groups):
            answered = [q for q in members if v in q["correct"]]
            if not answered:
                continue
            k, n = sum(q["correct"][v] for q in answered), len(answered)
            a, b = wilson(k, n)
            xs.append(j + (i - (len(order) - 1) / 2) * width)
            ys.append(100 * k / n)
            lo.append(100 * (k / n - a))
            hi.append(100 * (b - k / n))
        label = {"none": "none (full attention)", REFERENCE: f"{REFERENCE} (fast)", **(labels or {})}.get(v, v)
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=label)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{g}\n(n = {len(m)})" for g, m in groups], fontsize=8)
    ax.set_ylabel("accuracy % (95% Wilson interval)")
    ax.set_title("Quality presets on SmolLM2-135M: the 500 and the held-out families")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets", nargs="+", help="NAME=PROGRESS_FILE[+PROGRESS_FILE...][#FAMILY,...]")
    ap.add_argument("--candidate", default=CANDIDATE, help="the variant the rule is for (default: balanced)")
    ap.add_argument("--markdown", help="write the table (and the verdict) here")
    ap.add_argument("--plot", help="draw accuracy per set and family into this PNG (needs matplotlib)")
    ap.add_argument("--label", action="append", default=[], nargs=2, metavar=("VARIANT", "TEXT"),
                    help="a variant's name in the plot")
    a = ap.parse_args(argv)
    sets = {}
    for s in a.sets:
        name, _, path = s.partition("=")
        path, _, families = path.partition("#")
        if not path:
            ap.error(f"'{s}': give NAME=PROGRESS_FILE")
        sets[name] = read_joined(path.split("+"), set(families.split(",")) if families else None)
    variants, rows, pooled, verdict = build(sets, a.candidate)
    text = markdown(variants, rows, pooled) + ("\n\n" + verdict if verdict else "")
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text + "\n")
    if a.plot:
        plot(sets, variants, a.plot, dict(a.label))


if __name__ == "__main__":
    main()
