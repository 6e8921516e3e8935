#!/usr/bin/env python3
"""bench/quality_frontier.py on hand-made runs whose every number is known: the gap share,
McNemar's counts, each TTFT against the lazy of its own run, the store-backed column, an alias
and the Pareto marks."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../bench/quality_frontier.py")


def quality(variants_correct):
    """variants_correct: {variant: [bool per question]}; families alternate kv, hop."""
    n = len(next(iter(variants_correct.values())))
    # Questions 0 and 1 read alike (a suite can ask one question twice over other documents).
    qs = [{"family": "kv" if i % 2 == 0 else "hop", "question": f"q{max(i, 1)}", "answers": [f"a{max(i, 1)}"],
           "correct": {v: c[i] for v, c in variants_correct.items()}} for i in range(n)]
    return {"questions": qs}


def rag(p50):
    return {"runs": [{"label": v, "ttft_p50_ms": t} for v, t in p50.items()]}


def main():
    with tempfile.TemporaryDirectory() as d:
        def write(name, obj):
            path = os.path.join(d, name)
            with open(path, "w") as f:
                json.dump(obj, f)
            return path

        # 10 questions: none 8 right, lazy 4, fast (as cheap as lazy) 6, slow 8.
        a = write("a.json", quality({"none": [True] * 8 + [False] * 2,
                                     "lazy": [True] * 4 + [False] * 6}))
        b = write("b.json", quality({"lazy": [True] * 4 + [False] * 6,
                                     "fast": [True] * 6 + [False] * 4,
                                     "slow": [True] * 8 + [False] * 2}))
        # Two hosts: lazy at 100 ms on one, 300 ms on the other; the ratios are within each.
        r1 = write("r1.json", rag({"lazy": 100, "fast": 100, "prefix": 600}))
        r2 = write("r2.json", rag({"lazy": 300, "slow": 900}))
        rs = write("rs.json", rag({"lazy": 50, "slow": 55}))
        md = os.path.join(d, "t.md")
        out = subprocess.run([sys.executable, SCRIPT, "--quality", a, b, "--rag", r1, r2, "--rag-store", rs,
                              "--alias", "prefix=none", "--variants", "none", "prefix", "lazy", "fast", "slow",
                              "--markdown", md], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[1:-1]]
                for line in open(md).read().splitlines()[2:]}
        head = [c.strip() for c in open(md).read().splitlines()[0].split("|")[1:-1]]
        col = {h: i for i, h in enumerate(head)}

        def cell(v, h):
            return rows[v][col[h]]

        assert cell("fast", "n") == "10", "every question counted, repeated ones too"
        assert cell("fast", "gap recovered") == "50%", rows["fast"]
        assert cell("slow", "gap recovered") == "100%", rows["slow"]
        assert cell("fast", "vs lazy p (only/only)").endswith("(2/0)"), rows["fast"]
        assert cell("fast", "TTFT p50 vs lazy") == "1.00x"
        assert cell("slow", "TTFT p50 vs lazy") == "3.00x", "ratio against its own run's lazy"
        assert cell("slow", "same, copies in the store") == "1.10x"
        assert cell("prefix", "accuracy % [95%]").startswith("80.0"), "prefix answers as none"
        assert cell("prefix", "TTFT p50 vs lazy") == "6.00x"
        # Pareto: lazy is dominated by fast (same TTFT, more accurate); prefix by slow.
        assert cell("lazy", "Pareto") == "" and cell("fast", "Pareto") == "yes"
        assert cell("slow", "Pareto") == "yes" and cell("prefix", "Pareto") == ""
        assert cell("none", "Pareto") == "-", "untimed"
        assert cell("slow", "hop") == "80.0" and cell("lazy", "kv") == "40.0", rows["slow"]

        out = subprocess.run([sys.executable, SCRIPT, "--quality", b, "--markdown", md], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        row = [c.strip() for c in open(md).read().splitlines()[3].split("|")[1:-1]]
        assert row[0] == "fast" and row[head.index("vs none p (only/only)")] == "-", "no none run: no p against it"

        bad = write("bad.json", rag({"fast": 100}))
        out = subprocess.run([sys.executable, SCRIPT, "--quality", a, "--rag", bad], capture_output=True, text=True)
        assert out.returncode != 0 and "no lazy run" in out.stderr, out.stderr
    print("ok")


if __name__ == "__main__":
    main()
