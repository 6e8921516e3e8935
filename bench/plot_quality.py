#!/usr/bin/env python3
"""Plots of `lazyattn bench quality --json FILE`: accuracy per variant with 95% Wilson intervals,
by task family, by number of documents k and by the answer document's position.

    python3 bench/plot_quality.py bench/out/quality.json docs/img

writes quality_by_family.png, quality_by_k.png and quality_by_position.png into the directory,
and quality_table.md: accuracy [95% interval] per group and variant, and the paired comparisons.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def grouped_bars(acc, groups, variants, title, path, labels=None):
    fig, ax = plt.subplots(figsize=(max(7, 1.3 * len(groups) + 2), 4.2))
    width = 0.8 / max(1, len(variants))
    for i, v in enumerate(variants):
        xs, ys, lo, hi = [], [], [], []
        for j, g in enumerate(groups):
            cell = acc.get(g, {}).get(v)
            if not cell:
                continue
            xs.append(j + (i - (len(variants) - 1) / 2) * width)
            ys.append(100 * cell["accuracy"])
            lo.append(max(0.0, 100 * (cell["accuracy"] - cell["ci"][0])))
            hi.append(max(0.0, 100 * (cell["ci"][1] - cell["accuracy"])))
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=v)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(labels or groups)
    ax.set_ylabel("accuracy, % (95% Wilson interval)")
    ax.set_title(title)
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print("wrote", path)


# Every question, the generated families, those held out from training (heldout: the three
# together), the 2Wiki sample.
FAMILY_GROUPS = ["all", "kv", "hop", "agg", "attr", "bridge", "table", "heldout", "2wiki"]


def markdown_table(data, variants):
    acc = data["accuracy"]
    lines = ["| group | n | " + " | ".join(variants) + " |", "|---|---:|" + "---:|" * len(variants)]
    order = FAMILY_GROUPS[:]
    order += sorted((g for g in acc if g.startswith("k=")), key=lambda g: int(g[2:]))
    order += ["answer " + p for p in ["first", "early", "middle", "late", "last"]]
    for group in [g for g in order if g in acc]:
        cells = acc[group]
        first = cells.get(variants[0])
        if not first:
            continue
        row = [f"{100 * cells[v]['accuracy']:.1f} [{100 * cells[v]['ci'][0]:.1f}, {100 * cells[v]['ci'][1]:.1f}]"
               if v in cells else "" for v in variants]
        lines.append(f"| {group} | {first['n']} | " + " | ".join(row) + " |")
    lines += ["", "| variant | vs | difference, points [95%] | McNemar p | only variant / only reference |",
              "|---|---|---:|---:|---:|"]
    for p in data.get("paired", []):
        lines.append(f"| {p['variant']} | {p['reference']} | {100 * p['difference']:+.1f} "
                     f"[{100 * p['ci'][0]:+.1f}, {100 * p['ci'][1]:+.1f}] | {p['p_value']:.3g} | "
                     f"{p['only_variant']} / {p['only_reference']} |")
    if "gap_recovered" in data:
        lines += ["", "| variant | share of the lazy -> none gap recovered |", "|---|---:|"]
        for v, g in data["gap_recovered"].items():
            lines.append(f"| {v} | {100 * g:.0f}% |")
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        data = json.load(f)
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    acc = data["accuracy"]
    variants = data.get("variants") or list(acc["all"].keys())
    n = data.get("num_questions", "?")
    families = [g for g in FAMILY_GROUPS if g in acc]
    with open(os.path.join(out, "quality_table.md"), "w") as f:
        f.write(markdown_table(data, variants))
    print("wrote", os.path.join(out, "quality_table.md"))
    grouped_bars(acc, families, variants, f"Answer accuracy by task ({n} questions)",
                 os.path.join(out, "quality_by_family.png"))
    ks = sorted((g for g in acc if g.startswith("k=")), key=lambda g: int(g[2:]))
    grouped_bars(acc, ks, variants, "Synthetic tasks by number of documents k", os.path.join(out, "quality_by_k.png"))
    positions = [g for g in ["answer first", "answer early", "answer middle", "answer late", "answer last"] if g in acc]
    grouped_bars(acc, positions, variants, "kv and hop tasks by the answer document's position",
                 os.path.join(out, "quality_by_position.png"), [p.split(" ", 1)[1] for p in positions])


if __name__ == "__main__":
    main()
