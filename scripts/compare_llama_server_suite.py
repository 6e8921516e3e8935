#!/usr/bin/env python3
"""Compares a run of llama.cpp's server test suite (its JUnit XML) with the checked-in list of
expected failures, tests/e2e/llama_server_suite_expected.txt; scripts/run_llama_server_suite.sh
calls it.

Exit 1 when a test fails (or errors) that the list does not name, when a listed test now passes
("now passes, remove it from the list"), when the list is malformed, or (on a full run) when a
listed test did not run at all. Prints counts per file and in all.

  compare_llama_server_suite.py JUNIT_XML LIST [--partial] [--draft FILE]

--partial   the run was a subset (pytest arguments were given): listed tests that did not run are
            not reported as stale.
--draft F   write a list to F that would make this run pass: the entries of LIST that still fail
            (their reasons kept), and each new failure marked `unclassified` with its assertion,
            to be classified by hand before it replaces LIST (`unclassified` is refused).

The list: one line per expected failure, `TEST_ID | CATEGORY | WHY`, where CATEGORY is
`model-specific` (the expected text depends on llama.cpp's tiny test models), `not-served:FEATURE`
(a feature src/server/unserved_routes.cpp or the flag table lists as not served) or
`known-gap:ISSUE` (a gap in a served feature, filed); a CATEGORY ending in `?` marks a test whose
outcome varies from run to run (sampling without a seed, timing): it may pass or fail. `#` starts a
comment line.
"""
import argparse
import collections
import re
import sys
import xml.etree.ElementTree as ET

CATEGORY = re.compile(r"^(model-specific|not-served:[a-z0-9][a-z0-9_./-]*|known-gap:[A-Za-z0-9#_./-]+)\??$")


def test_id(case):
    """pytest's node id from a JUnit testcase: unit.test_basic + name -> unit/test_basic.py::name."""
    classname = case.get("classname", "")
    parts = classname.split(".")
    # A test inside a class: the class name is the last part, after the module.
    module, klass = parts, None
    if len(parts) > 2 and parts[-1][:1].isupper():
        module, klass = parts[:-1], parts[-1]
    node = "/".join(module) + ".py"
    if klass:
        node += "::" + klass
    return node + "::" + case.get("name", "")


def outcomes(junit_path):
    """{test id: (outcome, message, output)}, outcome one of passed, failed, error, skipped; output
    the test's captured stdout (the server's log lines among it)."""
    rank = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
    result = {}
    for case in ET.parse(junit_path).getroot().iter("testcase"):
        outcome, message = "passed", ""
        output = "".join(child.text or "" for child in case if child.tag == "system-out")
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                message = (child.get("message") or child.text or "").strip()
                break
        tid = test_id(case)
        # A test can appear twice (a teardown error after its call); keep the worst.
        if tid not in result or rank[outcome] > rank[result[tid][0]]:
            result[tid] = (outcome, message, output)
    return result


def read_list(path):
    entries, problems = collections.OrderedDict(), []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fields = [x.strip() for x in line.split(" | ", 2)]
            if len(fields) != 3 or not fields[0] or not fields[2]:
                problems.append(f"{path}:{number}: not `TEST_ID | CATEGORY | WHY`: {line}")
                continue
            tid, category, why = fields
            if not CATEGORY.match(category):
                problems.append(f"{path}:{number}: category '{category}' is not model-specific, "
                                f"not-served:FEATURE or known-gap:ISSUE")
            if tid in entries:
                problems.append(f"{path}:{number}: {tid} is listed twice")
            entries[tid] = (category, why)
    return entries, problems


def short(message, width=160):
    message = " ".join(message.split())
    return message if len(message) <= width else message[: width - 3] + "..."


def file_of(tid):
    return tid.split("::", 1)[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("junit")
    ap.add_argument("expected")
    ap.add_argument("--partial", action="store_true")
    ap.add_argument("--draft")
    args = ap.parse_args()

    results = outcomes(args.junit)
    expected, problems = read_list(args.expected)

    unexpected, now_passing, stale = [], [], []
    per_file = collections.defaultdict(collections.Counter)
    by_category = collections.Counter()
    refused_starts = []
    for tid, (outcome, message, output) in sorted(results.items()):
        counts = per_file[file_of(tid)]
        if "Server process died" in message:
            # The refusal: CLI11's line naming the flag (the server's stderr is in the output).
            lines = [line.strip() for line in output.splitlines() if line.strip()]
            why = [lines[i - 1] for i, line in enumerate(lines) if i > 0 and line.startswith("Run with --help")]
            why += [line for line in lines if "not supported here" in line or "error" in line.lower()]
            refused_starts.append((tid, why[0] if why else message))
        if outcome in ("failed", "error"):
            if tid in expected:
                counts["expected"] += 1
                by_category[expected[tid][0].split(":", 1)[0].rstrip("?")] += 1
            else:
                counts["UNEXPECTED"] += 1
                unexpected.append((tid, outcome, message))
        elif outcome == "passed":
            counts["passed"] += 1
            if tid in expected and not expected[tid][0].endswith("?"):
                counts["NOW PASSES"] += 1
                now_passing.append(tid)
        else:
            counts["skipped"] += 1
    if not args.partial:
        stale = [tid for tid in expected if tid not in results]

    if args.draft:
        with open(args.draft, "w", encoding="utf-8") as out:
            for tid, (outcome, message, output) in sorted(results.items()):
                if outcome not in ("failed", "error"):
                    continue
                # A hint for the hand that classifies: the routes that did not answer 200.
                routes = re.findall(r"method=(\S+) path=(\S+) status=(\d+)", output)
                hint = " ".join(sorted({f"{m} {p} {st}" for m, p, st in routes if st != "200"}))
                category, why = expected.get(tid, ("unclassified", f"[{hint}] " + short(message, 200)))
                out.write(f"{tid} | {category} | {why}\n")
        print(f"draft list written to {args.draft}")

    columns = ["passed", "expected", "skipped", "UNEXPECTED", "NOW PASSES"]
    width = max([len(f) for f in per_file] + [5])
    print(f"{'file':<{width}}  " + "  ".join(f"{c:>10}" for c in columns))
    total = collections.Counter()
    for name in sorted(per_file):
        total.update(per_file[name])
        print(f"{name:<{width}}  " + "  ".join(f"{per_file[name][c]:>10}" for c in columns))
    print(f"{'total':<{width}}  " + "  ".join(f"{total[c]:>10}" for c in columns))
    print(f"{len(results)} tests; expected failures by category: "
          + (", ".join(f"{k} {v}" for k, v in sorted(by_category.items())) or "none")
          + f"; server starts refused (process died before listening): {len(refused_starts)}")
    for tid, why in refused_starts:
        print(f"REFUSED START: {tid}\n    {short(why)}")

    for problem in problems:
        print(f"LIST ERROR: {problem}")
    for tid, outcome, message in unexpected:
        print(f"UNEXPECTED {outcome.upper()}: {tid}\n    {short(message)}")
    for tid in now_passing:
        print(f"NOW PASSES, remove it from the list: {tid}")
    for tid in stale:
        print(f"NOT RUN, remove it from the list (or the pin moved): {tid}")

    failed = bool(problems or unexpected or now_passing or stale)
    print("llama.cpp server suite: " + ("FAIL" if failed else "OK, every failure is listed"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
