#!/usr/bin/env python3
"""bench/preset_evidence.py on hand-made progress files whose every count is known: questions
not answered by every variant (and a cut last line) left out, McNemar per family and pooled over
sets, the gap share (per family and pooled), the issue 63 rule (met; not met when balanced is
significantly worse on one family), a file's families picked with '#', another candidate, files
of one variant each joined with '+'."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plot_check import check_plot  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../bench/preset_evidence.py")


def progress(path, variants, questions, cut_line=True):
    """questions: [(family, {variant: correct})]; a variant missing from a question's dict has not
    answered it."""
    with open(path, "w") as f:
        f.write(json.dumps({"bench_quality_progress": 1, "arguments": {"variants": variants}}) + "\n")
        for i, (family, correct) in enumerate(questions):
            for v, ok in correct.items():
                f.write(json.dumps({"variant": v, "index": i, "family": family, "correct": ok}) + "\n")
        if cut_line:
            f.write('{"variant": "lazy", "index": 99, "fam')


def run(*args):
    r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def main():
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "a.jsonl"), os.path.join(d, "b.jsonl")
        # Set a: kv, 10 questions, balanced alone answers 6, both answer 2, neither 2; an 11th
        # question only lazy has answered (left out).
        qs = [("kv", {"lazy": False, "balanced": True})] * 6 + [("kv", {"lazy": True, "balanced": True})] * 2
        qs += [("kv", {"lazy": False, "balanced": False})] * 2 + [("kv", {"lazy": True})]
        progress(a, ["lazy", "balanced"], qs)
        out = run("a=" + a)
        assert "| a | kv | 10 | 20.0 [5.7, 51.0] | 80.0 [49.0, 94.3] | +60.0, p = 0.0313 (6/0) |" in out, out
        assert "pooled over 10 questions: +60.0, p = 0.0313 (6/0)" in out, out
        assert "on these questions: met" in out, out
        # Set b: attr, where balanced loses 7 to 0 (p = 0.0156), with none for the gap.
        qs = [("attr", {"none": True, "lazy": True, "balanced": False})] * 7
        qs += [("attr", {"none": True, "lazy": False, "balanced": False})] * 3
        progress(b, ["none", "lazy", "balanced"], qs, cut_line=False)
        out = run("a=" + a, "b=" + b)
        assert "| b | attr | 10 |" in out and "-70.0, p = 0.0156 (0/7); -233% of the gap" in out, out
        # Pooled: 6 only balanced, 7 only lazy over 20 questions.
        assert "pooled over 20 questions: -5.0, p = 1 (6/7)" in out, out
        assert "significantly worse on: b attr" in out and "on these questions: not met" in out, out
        assert "balanced recovers -233% of it (-7 of 3 questions)" in out, out
        # '#FAMILY' keeps one family of a file (a run cut past its families); --candidate names
        # the variant the rule is for.
        c = os.path.join(d, "c.jsonl")
        qs = [("bridge", {"none": True, "lazy": False, "balanced+damp": True})] * 5
        qs += [("table", {"none": False, "lazy": True, "balanced+damp": False})] * 4
        progress(c, ["none", "lazy", "balanced+damp"], qs)
        out = run("--candidate", "balanced+damp", "c=" + c + "#bridge")
        assert "| c | bridge | 5 |" in out and "table" not in out, out
        assert "balanced+damp vs lazy pooled over 5 questions: +100.0, p = 0.0625 (5/0)" in out, out
        assert "on these questions: not met" in out and "recovers 100% of it (5 of 5 questions)" in out, out
        # Files joined by '+': one variant a file, paired by question; a question only one file
        # has answered is left out, and files of other questions are refused.
        e, f = os.path.join(d, "e.jsonl"), os.path.join(d, "f.jsonl")
        progress(e, ["lazy"], [("kv", {"lazy": False})] * 4 + [("kv", {"lazy": True})] * 2)
        progress(f, ["accurate"], [("kv", {"accurate": True})] * 5)
        out = run("--candidate", "accurate", "e=" + e + "+" + f)
        assert "| e | kv | 5 | 20.0" in out and "accurate vs lazy pooled over 5 questions: +80.0, p = 0.125 (4/0)" in out, out
        progress(f, ["accurate"], [("hop", {"accurate": True})] * 5)
        r = subprocess.run([sys.executable, SCRIPT, "e=" + e + "+" + f], capture_output=True, text=True)
        assert r.returncode != 0 and "not the same questions" in r.stderr, r.stderr
        check_plot(SCRIPT, ["a=" + a, "c=" + c + "#bridge", "--label", "balanced+damp", "the new balanced"], d)
    print("ok")


if __name__ == "__main__":
    main()
