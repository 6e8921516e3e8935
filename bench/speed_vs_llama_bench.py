#!/usr/bin/env python3
"""Prefill and decode speed per GGUF file, lazyattn vs llama.cpp's own llama-bench.

For each file, runs alternately (A B A B ..., --reps rounds, each a separate process)

  build/lazyattn bench speed --model FILE --prompt-tokens 512 --gen-tokens 128 --threads 2 \\
      --reps 1+W --json          (the first W repetitions are warm-up and dropped)
  llama-bench -m FILE -p 512 -n 0 -t 2 -r R -o json          (pp512; llama-bench warms up first)
  llama-bench -m FILE -p 0 -n 128 -d 512 -t 2 -r R -o json   (tg128 at depth 512)

and reports per file the medians over the rounds, tok/s and the ratio lazyattn / llama.cpp, as
a Markdown table (bench/out/speed_gguf.md) and JSON (bench/out/speed_gguf.json). A file that one
engine cannot run (e.g. a quantization type lazyattn does not support yet) gets its error in
the table and the run goes on.

Decode is compared at the same depth: lazyattn's decode follows its 512-token prompt (the KV
holds 512-640 tokens while it decodes), so llama-bench's tg128 runs with `-d 512` (it fills 512
tokens of context first, untimed, then decodes 128), i.e. llama-bench's "tg128 @ d512" row.
--tg-depth 0 gives the old comparison (llama-bench's tg128 from an empty context). lazyattn's
`bench speed` cannot decode from an empty context (its prompt has at least one token), which is
why the depth is matched on llama-bench's side.

llama-bench comes from scripts/build_llama_tools.sh (LLAMA_TOOLS_BIN), the files from
scripts/make_test_models.sh; with no --models, the embedded model plus every test model that
exists is benchmarked.
"""
import argparse
import glob
import json
import os
import platform
import resource
import shlex
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def find_llama_bench(explicit):
    if explicit:
        return explicit
    b = os.environ.get("LLAMA_TOOLS_BIN")
    if not b:
        try:
            env = subprocess.run([os.path.join(ROOT, "scripts/build_llama_tools.sh"), "--env"],
                                 check=True, capture_output=True, text=True).stdout
            for line in env.splitlines():
                if line.startswith("LLAMA_TOOLS_BIN="):
                    b = line.split("=", 1)[1]
        except (OSError, subprocess.CalledProcessError):
            pass
    path = os.path.join(b or "", "llama-bench")
    if not os.access(path, os.X_OK):
        sys.exit(f"error: llama-bench not found at '{path}'; run scripts/build_llama_tools.sh "
                 "or pass --llama-bench")
    return path


def default_models():
    files = [os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf")]
    try:
        out = subprocess.run([os.path.join(ROOT, "scripts/make_test_models.sh"), "--paths"],
                             check=True, capture_output=True, text=True, cwd=ROOT).stdout
        files += [os.path.join(ROOT, l.strip()) for l in out.splitlines() if l.strip()]
    except (OSError, subprocess.CalledProcessError):
        files += sorted(glob.glob(os.path.join(ROOT, "models/*.gguf")))
    seen, uniq = set(), []
    for f in files:
        if os.path.exists(f) and os.path.realpath(f) not in seen:
            seen.add(os.path.realpath(f))
            uniq.append(f)
    return uniq


class RunError(Exception):
    pass


def cpu_busy_seconds():
    """CPU seconds spent busy by the whole machine so far (all cores), from /proc/stat."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")


# CPU seconds per wall second that other processes used during the last run (see run()).
LAST_OTHER_LOAD = [None]


def wait_idle(max_wait, threshold=0.25):
    """Waits (up to max_wait s) until the machine is idle: other processes using less than
    `threshold` of a core over one second. Returns the seconds waited."""
    t0 = time.time()
    while time.time() - t0 < max_wait:
        b0 = cpu_busy_seconds()
        time.sleep(1.0)
        b1 = cpu_busy_seconds()
        if b0 is None or b1 is None or b1 - b0 < threshold:
            break
    return time.time() - t0


def run(cmd, timeout):
    # The CPU time other processes take while this one runs: the machine's busy time over the
    # run minus the child's own (rusage), per wall second; above ~0.2 the timing is suspect.
    b0, t0 = cpu_busy_seconds(), time.time()
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err_text = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise RunError(f"timed out after {timeout}s")
    b1, wall = cpu_busy_seconds(), time.time() - t0
    LAST_OTHER_LOAD[0] = None
    if b0 is not None and b1 is not None and wall > 0:
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        own = ru.ru_utime + ru.ru_stime - RUSAGE_SEEN[0]
        RUSAGE_SEEN[0] = ru.ru_utime + ru.ru_stime
        LAST_OTHER_LOAD[0] = max(0.0, (b1 - b0 - own) / wall)
    if p.returncode != 0:
        msg = (err_text.strip() or out.strip()).splitlines()
        err = [l for l in msg if "error" in l.lower()] or msg[-1:] or [f"exit {p.returncode}"]
        raise RunError(f"exit {p.returncode}: {err[-1][:300]}")
    return out


RUSAGE_SEEN = [0.0]


def run_lazyattn(exe, model, a):
    cmd = [exe, "bench", "speed", "--model", model, "--prompt-tokens", str(a.prompt_tokens),
           "--gen-tokens", str(a.gen_tokens), "--threads", str(a.threads),
           "--reps", str(1 + a.lazyattn_warmup), "--json"] + a.lazyattn_args
    out = run(cmd, a.timeout)
    rows = [json.loads(l) for l in out.splitlines() if l.strip().startswith("{")]
    if not rows:
        raise RunError("no JSON line in the output")
    r = rows[-1]
    return {"pp": r["prefill_tok_s"], "tg": r["decode_tok_s"], "cmd": shlex.join(cmd),
            "other_load": LAST_OTHER_LOAD[0]}


def llama_bench_rows(cmd, a):
    out = run(cmd, a.timeout)
    start = out.find("[")
    try:
        return json.loads(out[start:]) if start >= 0 else []
    except json.JSONDecodeError as e:
        raise RunError(f"unparsable llama-bench JSON: {e}")


def run_llama_bench(exe, model, a):
    # Two processes: pp from an empty context, tg at depth --tg-depth (llama-bench would
    # otherwise run the cross product of -p/-n and -d).
    common = ["-m", model, "-t", str(a.threads), "-r", str(a.llama_bench_reps), "-o", "json"]
    cmd_pp = [exe] + common + ["-p", str(a.prompt_tokens), "-n", "0"] + a.llama_bench_args
    cmd_tg = [exe] + common + ["-p", "0", "-n", str(a.gen_tokens), "-d", str(a.tg_depth)] + \
        a.llama_bench_args
    res = {"cmd": shlex.join(cmd_pp) + " ; " + shlex.join(cmd_tg)}
    rows = llama_bench_rows(cmd_pp, a)
    load_pp = LAST_OTHER_LOAD[0]
    if a.wait_idle > 0:
        wait_idle(a.wait_idle)
    rows += llama_bench_rows(cmd_tg, a)
    loads = [x for x in (load_pp, LAST_OTHER_LOAD[0]) if x is not None]
    res["other_load"] = max(loads) if loads else None
    for r in rows:
        depth = r.get("n_depth", 0)
        if r.get("n_prompt") == a.prompt_tokens and r.get("n_gen") == 0 and depth == 0:
            res["pp"] = r["avg_ts"]
            res["pp_samples"] = r.get("samples_ts")
        elif r.get("n_prompt") == 0 and r.get("n_gen") == a.gen_tokens and depth == a.tg_depth:
            res["tg"] = r["avg_ts"]
            res["tg_samples"] = r.get("samples_ts")
        res.setdefault("model_type", r.get("model_type"))
        res.setdefault("model_size", r.get("model_size"))
        res.setdefault("build", f"{r.get('build_commit', '?')} ({r.get('build_number', '?')})")
        res.setdefault("cpu_info", r.get("cpu_info"))
    if "pp" not in res or "tg" not in res:
        raise RunError(f"no pp{a.prompt_tokens} / tg{a.gen_tokens} @ d{a.tg_depth} rows in "
                       "llama-bench's JSON")
    return res


def fmt(x):
    return "-" if x is None else f"{x:.1f}"


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", nargs="+", help="GGUF files (default: embedded + test models)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--tg-depth", type=int, default=None,
                    help="llama-bench's context depth for tg (default: --prompt-tokens, the depth "
                         "at which lazyattn decodes; 0 = from an empty context)")
    ap.add_argument("--reps", type=int, default=5, help="alternating rounds (medians over them)")
    ap.add_argument("--llama-bench-reps", type=int, default=1,
                    help="llama-bench -r per round (its avg is the round's value)")
    ap.add_argument("--lazyattn-warmup", type=int, default=1,
                    help="warm-up repetitions dropped per lazyattn process (llama-bench warms up "
                         "too)")
    ap.add_argument("--lazyattn", default=os.path.join(ROOT, "build/lazyattn"))
    ap.add_argument("--llama-bench", help="default: LLAMA_TOOLS_BIN/llama-bench")
    ap.add_argument("--lazyattn-args", default="", help="extra arguments, one shell string")
    ap.add_argument("--llama-bench-args", default="", help="extra arguments, one shell string")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per process")
    ap.add_argument("--wait-idle", type=float, default=0.0,
                    help="before each process, wait up to this many seconds for other processes "
                         "to use less than a quarter core (a shared machine); every run records "
                         "the other processes' CPU use during it ('other load', cores)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/out/speed_gguf"),
                    help="output path without extension (.json and .md are written)")
    a = ap.parse_args()
    a.lazyattn_args = shlex.split(a.lazyattn_args)
    a.llama_bench_args = shlex.split(a.llama_bench_args)
    if a.tg_depth is None:
        a.tg_depth = a.prompt_tokens

    llama_bench = find_llama_bench(a.llama_bench)
    if not os.access(a.lazyattn, os.X_OK):
        sys.exit(f"error: {a.lazyattn} not found (make build)")
    models = a.models or default_models()
    if not models:
        sys.exit("error: no GGUF files (scripts/make_test_models.sh makes them)")
    for m in models:
        if not os.path.exists(m):
            sys.exit(f"error: {m} does not exist")

    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    pp_l, tg_l = f"pp{a.prompt_tokens}", f"tg{a.gen_tokens}"
    results = []
    engines = (("lazyattn", lambda m: run_lazyattn(a.lazyattn, m, a)),
               ("llama.cpp", lambda m: run_llama_bench(llama_bench, m, a)))
    t_start = time.time()
    for i, model in enumerate(models):
        name = os.path.basename(model)
        size = os.path.getsize(os.path.realpath(model))
        entry = {"file": name, "path": model, "bytes": size,
                 "runs": {e: [] for e, _ in engines}, "error": {}}
        for rep in range(a.reps):
            for engine, fn in engines:
                if engine in entry["error"]:
                    continue
                waited = wait_idle(a.wait_idle) if a.wait_idle > 0 else 0.0
                try:
                    r = fn(model)
                    r["waited_s"] = round(waited, 1)
                except RunError as e:
                    entry["error"][engine] = str(e)
                    print(f"[{i + 1}/{len(models)} {name} round {rep + 1}/{a.reps}] {engine:9s} "
                          f"FAILED: {e}", flush=True)
                    continue
                entry["runs"][engine].append(r)
                load = "" if r.get("other_load") is None else f"   other load {r['other_load']:.2f}"
                print(f"[{i + 1}/{len(models)} {name} round {rep + 1}/{a.reps}] {engine:9s} "
                      f"{pp_l} {r['pp']:9.1f} tok/s   {tg_l} {r['tg']:8.1f} tok/s{load}", flush=True)
        entry["median"] = {
            e: ({"pp": statistics.median(r["pp"] for r in runs),
                 "tg": statistics.median(r["tg"] for r in runs)} if runs else None)
            for e, runs in entry["runs"].items()}
        for e, runs in entry["runs"].items():
            if runs and "model_type" in runs[0]:
                entry["llama_model_type"] = runs[0]["model_type"]
        results.append(entry)
        write_outputs(a, results, pp_l, tg_l, llama_bench, time.time() - t_start)
    print()
    print(open(a.out + ".md").read())
    print(f"wrote {os.path.relpath(a.out, ROOT)}.md and .json")
    return 0


def write_outputs(a, results, pp_l, tg_l, llama_bench, elapsed):
    build = next((r["runs"]["llama.cpp"][0].get("build") for r in results
                  if r["runs"]["llama.cpp"]), "?")
    info = {"cpu": cpu_model(), "threads": a.threads, "reps": a.reps,
            "llama_bench_reps": a.llama_bench_reps, "lazyattn_warmup": a.lazyattn_warmup,
            "prompt_tokens": a.prompt_tokens, "gen_tokens": a.gen_tokens, "tg_depth": a.tg_depth,
            "date": time.strftime("%Y-%m-%d %H:%M"), "llama_bench": llama_bench,
            "llama_cpp_build": build, "elapsed_s": round(elapsed, 1)}
    with open(a.out + ".json", "w") as f:
        json.dump({"machine": info, "results": results}, f, indent=1)
    lines = [
        f"Machine: {info['cpu']}, {a.threads} threads; {info['date']}; medians of {a.reps} "
        f"alternating rounds (lazyattn `bench speed`, {a.lazyattn_warmup} warm-up repetition "
        f"dropped; llama.cpp `llama-bench -r {a.llama_bench_reps}`, build {build}).",
        "",
        f"| file | size | {pp_l} lazyattn | {pp_l} llama.cpp | {pp_l} ratio | "
        f"{tg_l} lazyattn | {tg_l} llama.cpp | {tg_l} ratio | other load |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    notes = []
    for r in results:
        ml, mc = r["median"].get("lazyattn"), r["median"].get("llama.cpp")
        lp, lt = (ml["pp"], ml["tg"]) if ml else (None, None)
        cp, ct = (mc["pp"], mc["tg"]) if mc else (None, None)
        size = f"{r['bytes'] / 2**20:.0f} MiB" if r["bytes"] < 2**30 else \
            f"{r['bytes'] / 2**30:.2f} GiB"
        flag = ""
        if r["error"]:
            flag = " (*)"
            for e, msg in r["error"].items():
                notes.append(f"(*) {r['file']}: {e} failed: {msg}")
        loads = [x.get("other_load") for runs in r["runs"].values() for x in runs]
        loads = [x for x in loads if x is not None]
        load = f"{max(loads):.2f}" if loads else "-"
        lines.append(f"| {r['file']}{flag} | {size} | {fmt(lp)} | {fmt(cp)} | {ratio(lp, cp)} | "
                     f"{fmt(lt)} | {fmt(ct)} | {ratio(lt, ct)} | {load} |")
    lines.append("")
    depth = (f"both decode after {a.tg_depth} tokens of context (llama-bench `-d {a.tg_depth}`)"
             if a.tg_depth == a.prompt_tokens else
             f"llama-bench's {tg_l} decodes at depth {a.tg_depth}, lazyattn's after the "
             f"{a.prompt_tokens}-token prompt")
    lines.append(f"ratio = lazyattn / llama.cpp (above 1: lazyattn faster). {tg_l}: {depth}. "
                 "other load = the most CPU (cores) other processes used during any run of the "
                 "row; above ~0.2 the row's timing is suspect (llama.cpp's decode suffers most).")
    if notes:
        lines.append("")
        lines += notes
    with open(a.out + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
