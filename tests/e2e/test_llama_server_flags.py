#!/usr/bin/env python3
"""Every llama-server flag of the pinned llama.cpp has a place in `lazyattn serve`.

Reads the pinned llama.cpp's common/arg.cpp (LLAMA_CPP_SRC, else scripts/build_llama_tools.sh
--sources, which fetches llama-cpp-python's sdist from PyPI once), takes every common_arg that
llama-server registers (its examples include LLAMA_EXAMPLE_SERVER or LLAMA_EXAMPLE_COMMON, the
default, and it is not excluded from the server nor preset-only), and checks each spelling against
`lazyattn serve --list-flags` (a hidden dump of every option serve takes and of the multi-letter
single-dash spellings normalize_arguments rewrites):

  * every spelling is an option of serve: honoured, mapped, warned or refused (compat_flags.cpp);
  * it takes as many values as llama-server's, so a pasted command line parses the same words;
  * all the warned flags together start (`--check`, exit 0) with one warning line each, and each
    refused flag alone exits 2 saying why;
  * docs/api.md's table of warned and refused flags is compat_flags.cpp's table, row for row
    (names, ignored/refused, the reason), and each llama-server spelling its honoured table names
    is an option of serve.

Usage: test_llama_server_flags.py LAZYATTN [--print-docs-table]
Exit 0: passed; 1: failed; 77: skipped (llama.cpp's sources could not be had).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SKIP = 77
DOCS_START = "Accepted with a warning, or refused."
HONOURED_START = "Honoured or mapped:"


def llama_cpp_source():
    src = os.environ.get("LLAMA_CPP_SRC")
    if src and os.path.isfile(os.path.join(src, "common", "arg.cpp")):
        return src
    try:
        r = subprocess.run([os.path.join(ROOT, "scripts", "build_llama_tools.sh"), "--sources"],
                           capture_output=True, text=True, timeout=1200)
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"SKIP: scripts/build_llama_tools.sh --sources did not finish: {e}")
        sys.exit(SKIP)
    m = re.search(r"^LLAMA_CPP_SRC=(.*)$", r.stdout, re.M)
    if r.returncode != 0 or not m or not os.path.isfile(os.path.join(m.group(1), "common", "arg.cpp")):
        print("SKIP: llama.cpp's sources could not be had (scripts/build_llama_tools.sh --sources downloads "
              "llama-cpp-python's sdist from PyPI; set LLAMA_CPP_SRC to a llama.cpp tree instead):\n"
              + r.stderr[-2000:])
        sys.exit(SKIP)
    return m.group(1)


# ---- common/arg.cpp ---------------------------------------------------------------------------

def strip_comments(src):
    out, i, n = [], 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith('R"(', i):
            j = src.index(')"', i + 3)
            out.append(src[i:j + 2])
            i = j + 2
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c:
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            i = src.index("*/", i + 2) + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_call(src, open_paren):
    """The top-level arguments of the call whose '(' is at open_paren, and the index after its ')'."""
    depth, i, args, start = 0, open_paren, [], open_paren + 1
    while True:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while src[j] != c:
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(src[start:i])
                return args, i + 1
        elif c == "," and depth == 1:
            args.append(src[start:i])
            start = i + 1
        i += 1


def server_args(arg_cpp):
    """[(spellings, values)] of every option llama-server registers; a --no- form is its own entry."""
    src = strip_comments(open(arg_cpp, encoding="utf-8").read())
    named = {m.group(1): set(re.findall(r"LLAMA_EXAMPLE_\w+", m.group(2))) for m in re.finditer(
        r"static\s+std::initializer_list<enum llama_example>\s+(\w+)\s*=\s*\{([^}]*)\}", src)}
    out = []
    for m in re.finditer(r"add_opt\(\s*common_arg\(", src):
        args, end = split_call(src, m.end() - 1)
        _, close = split_call(src, src.index("(", m.start()))
        chain = src[end:close]  # .set_examples(...).set_env(...)...
        examples = {"LLAMA_EXAMPLE_COMMON"}
        se = re.search(r"\.set_examples\(\s*(\{[^}]*\}|\w+)\s*\)", chain)
        if se:
            t = se.group(1)
            examples = set(re.findall(r"LLAMA_EXAMPLE_\w+", t)) if t.startswith("{") else named[t]
        sx = re.search(r"\.set_excludes\(\s*\{([^}]*)\}\s*\)", chain)
        excludes = set(re.findall(r"LLAMA_EXAMPLE_\w+", sx.group(1))) if sx else set()
        if not examples & {"LLAMA_EXAMPLE_SERVER", "LLAMA_EXAMPLE_COMMON"} or "LLAMA_EXAMPLE_SERVER" in excludes:
            continue
        if ".set_preset_only()" in chain:
            continue  # a preset file's key, not a command-line flag
        spellings = re.findall(r'"([^"]*)"', args[0])
        if args[1].strip().startswith("{"):  # (args, args_neg, help, bool handler): flags both
            out.append((spellings, 0))
            out.append((re.findall(r'"([^"]*)"', args[1]), 0))
        else:  # (args, help, handler): a flag; (args, hint, help, handler): a value; two hints: two
            out.append((spellings, {3: 0, 4: 1, 5: 2}[len(args)]))
    return out


# ---- lazyattn -----------------------------------------------------------------------------------

class Option:
    def __init__(self, kind, values, names, help_text):
        self.kind, self.values, self.names, self.help = kind, values, names, help_text
        self.shorts = []  # multi-letter single-dash spellings rewritten to one of names

    def long_name(self):  # what its warning and refusal name
        return next(n for n in self.names if n.startswith("--"))

    def why(self):
        return self.help.split(": ", 1)[1] if self.kind != "option" else self.help


def serve_options(lazyattn):
    r = subprocess.run([lazyattn, "serve", "--list-flags"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        sys.exit(f"FAIL: lazyattn serve --list-flags exited {r.returncode}:\n{r.stdout}{r.stderr}")
    options, by_name, shorts = [], {}, []
    for line in r.stdout.splitlines():
        parts = line.split(" ", 3)
        if parts[0] == "short":
            shorts.append((parts[1], parts[2]))
            continue
        o = Option(parts[0], int(parts[1]), parts[2].split(","), parts[3] if len(parts) > 3 else "")
        options.append(o)
        for n in o.names:
            by_name[n] = o
    for single_dash, long_name in shorts:
        if long_name in by_name:  # -dev rewrites to --device, an option of every computing command
            by_name[single_dash] = by_name[long_name]
            by_name[long_name].shorts.append(single_dash)
    return options, by_name, shorts


def run(lazyattn, args, timeout=120):
    # The embedded model (LAZYATTN_MODEL, else the checkout's), found without --model.
    r = subprocess.run([lazyattn, "serve", *args], capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def docs_row(o):
    names = ", ".join(f"`{n}`" for n in sorted(o.shorts) + o.names)
    what = "refused" if o.kind == "refuse" else "ignored"
    return f"| {names} | {what} | {o.why().replace('|', chr(92) + '|')} |"


def docs_section(text, start):
    i = text.index(start)
    rows = []
    for line in text[i:].splitlines()[1:]:
        if line.startswith("|"):
            rows.append(line)
        elif rows:
            break
    return rows[2:]  # after the header and its rule


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    lazyattn = sys.argv[1]
    options, by_name, shorts = serve_options(lazyattn)
    compat = [o for o in options if o.kind != "option"]
    if "--print-docs-table" in sys.argv:
        print("| flag | what lazyattn does | why |\n|---|---|---|")
        print("\n".join(docs_row(o) for o in compat))
        return 0

    failures = []
    arg_cpp = os.path.join(llama_cpp_source(), "common", "arg.cpp")
    llama = server_args(arg_cpp)
    spellings = {s for names, _ in llama for s in names}
    if len(llama) < 150 or not {"--port", "--host", "--model", "--api-key"} <= spellings:
        sys.exit(f"FAIL: the parse of {arg_cpp} found {len(llama)} options; llama-server has some 250")

    # Every spelling is placed, and takes the values llama-server's does.
    placed = {}
    for names, values in llama:
        for s in names:
            o = by_name.get(s)
            if o is None:
                failures.append(f"llama-server's {s} ({' '.join(names)}) is not placed: add it to kFlags in "
                                "src/cli/compat_flags.cpp (warn or refuse) or map it in cli_options.cpp")
                continue
            placed[s] = o
            if not (o.values == values or o.values == -1 and values in (0, 1)):
                failures.append(f"{s} takes {values} value(s) in llama-server but {o.values} in lazyattn serve")
    entries = {id(o): o for o in placed.values()}
    tally = {k: sum(1 for o in entries.values() if o.kind == k) for k in ("option", "warn", "refuse")}
    print(f"llama-server: {len(llama)} options, {len(spellings)} spellings; lazyattn serve places them as "
          f"{tally['option']} of its own options (honoured or mapped), {tally['warn']} warned, "
          f"{tally['refuse']} refused")

    # All the warned flags at once start, with one warning each.
    args = []
    for o in compat:
        if o.kind == "warn":
            args += [o.long_name()] + ["7"] * max(o.values, 0)
    code, out = run(lazyattn, args + ["--port", "0", "--check"])
    warnings = [line for line in out.splitlines() if " warning " in line or line.startswith("warning ")]
    if code != 0 or "start-up ok" not in out:
        failures.append(f"serve with every warned flag did not start (exit {code}):\n{out[-3000:]}")
    for o in compat:
        named = re.compile(re.escape("warning " + o.long_name()) + r"( \S+)* \(")
        if o.kind == "warn" and sum(1 for w in warnings if named.search(w)) != 1:
            failures.append(f"{o.long_name()}: expected one warning line naming it, got "
                            f"{sum(1 for w in warnings if named.search(w))}")
    # Each refused flag alone exits 2 with its reason (before anything loads).
    for o in compat:
        if o.kind != "refuse":
            continue
        code, out = run(lazyattn, [o.long_name()] + ["7"] * max(o.values, 0) + ["--port", "0", "--check"])
        if code != 2 or "is not supported here: " + o.why() not in out:
            failures.append(f"{o.long_name()}: expected exit 2 with its reason, got {code}:\n{out[-800:]}")
    # llama-server's values that lazyattn reads its own way.
    cases = [
        (["--host", "127.0.0.1,::1"], 0, "listening on http://[::1]:"),
        (["--host", "/tmp/llama.sock"], 2, "no UNIX sockets"),
        (["--alias", "smol,smol-instruct"], 0, "the model id is smol; requests naming smol-instruct"),
        (["--chat-template", "command-r"], 0, "start-up ok"),
        (["--chat-template", "{% for m in messages %}{{ m.content }}{% endfor %}"], 0, "start-up ok"),
        (["--chat-template", "command-r-plus"], 0, "taken as the template's text"),
        (["--chat-template", "missing/command-r-plus.jinja"], 2, "no such file"),
        (["-dev", "none", "-lv", "4", "--log-jsonl", "--backend_sampling"], 0, "--backend-sampling (llama-server)"),
        (["-dev", "CUDA1"], 2, "CUDA_VISIBLE_DEVICES=1"),
        (["--tensor-parallel-size", "1", "--spec-type", "none"], 0, "--spec-type none (llama-server) ignored"),
    ]
    for case_args, want_code, want in cases:
        code, out = run(lazyattn, case_args + ["--port", "0", "--check"])
        if code != want_code or want not in out:
            failures.append(f"serve {' '.join(case_args)}: expected exit {want_code} and {want!r}, got {code}:\n"
                            + out[-800:])

    # docs/api.md's tables are this table.
    api = open(os.path.join(ROOT, "docs", "api.md"), encoding="utf-8").read()
    documented = docs_section(api, DOCS_START)
    want_rows = [docs_row(o) for o in compat]
    for row in sorted(set(want_rows) - set(documented)):
        failures.append(f"docs/api.md lacks this row (test_llama_server_flags.py --print-docs-table prints them):\n"
                        f"{row}")
    for row in sorted(set(documented) - set(want_rows)):
        failures.append(f"docs/api.md has a row compat_flags.cpp does not:\n{row}")
    for row in docs_section(api, HONOURED_START):
        for s in re.findall(r"`(-[^`\s]+)`", row.split("|")[1]):
            if by_name.get(s, Option("", 0, [], "")).kind != "option":
                failures.append(f"docs/api.md's honoured table names {s}, which is not a serve option of its own")

    for f in failures:
        print("FAIL:", f)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
