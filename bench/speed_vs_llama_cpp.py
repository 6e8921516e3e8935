#!/usr/bin/env python3
"""Prefill and decode speed, lazyattn vs llama.cpp, measured side by side in one invocation.

Runs `lazyattn bench speed` and bench/peer/llama_cpp_bench.py alternately (A B A B ...), each
repetition a separate process with the same GGUF, the same thread count and a prompt of exactly
the same length, and reports medians of --reps runs per engine with the ratio lazyattn/llama.cpp.
Writes bench/out/speed.json and prints a Markdown table ready for docs/benchmarks.md.
"""
import argparse
import json
import os
import platform
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


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rows = [json.loads(l) for l in out.splitlines() if l.strip().startswith("{")]
    rows = [r for r in rows if r.get("rep") != "median"]
    return rows[-1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, nargs="+", default=[512])
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/out/speed.json"))
    args = ap.parse_args()

    lazyattn = os.path.join(ROOT, "build/lazyattn")
    peer = [sys.executable, os.path.join(ROOT, "bench/peer/llama_cpp_bench.py")]
    results = []
    for n in args.prompt_tokens:
        runs = {"lazyattn": [], "llama.cpp": []}
        for rep in range(args.reps):
            for engine in ("lazyattn", "llama.cpp"):
                if engine == "lazyattn":
                    cmd = [lazyattn, "bench", "speed", "--model", args.model, "--threads", str(args.threads),
                           "--prompt-tokens", str(n), "--gen-tokens", str(args.gen_tokens), "--json"]
                else:
                    cmd = peer + ["--model", args.model, "--threads", str(args.threads), "--prompt-tokens", str(n),
                                  "--gen-tokens", str(args.gen_tokens), "--reps", "1", "--json"]
                row = run_json(cmd)
                runs[engine].append(row)
                print(f"[{n} tokens, rep {rep + 1}/{args.reps}] {engine:9s} prefill {row['prefill_tok_s']:8.1f} tok/s"
                      f"   decode {row['decode_tok_s']:7.1f} tok/s", flush=True)
        med = {e: {k: statistics.median(r[k] for r in rows) for k in ("prefill_tok_s", "decode_tok_s")}
               for e, rows in runs.items()}
        results.append({"prompt_tokens": n, "gen_tokens": args.gen_tokens, "median": med, "runs": runs})

    info = {"cpu": cpu_model(), "threads": args.threads, "reps": args.reps, "date": time.strftime("%Y-%m-%d"),
            "model": os.path.basename(os.path.realpath(args.model))}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"machine": info, "results": results}, f, indent=1)

    print(f"\nMachine: {info['cpu']}, {args.threads} threads; {info['model']}; medians of {args.reps} alternating runs\n")
    print("| prompt | phase | lazyattn tok/s | llama.cpp tok/s | lazyattn / llama.cpp |")
    print("|---:|---|---:|---:|---:|")
    for r in results:
        for phase, key, label in (("prefill", "prefill_tok_s", f"{r['prompt_tokens']} tokens"),
                                  ("decode", "decode_tok_s", f"{r['gen_tokens']} tokens")):
            a, b = r["median"]["lazyattn"][key], r["median"]["llama.cpp"][key]
            print(f"| {r['prompt_tokens']} | {phase} ({label}) | {a:.1f} | {b:.1f} | {a / b:.2f}x |")
    print(f"\nwrote {os.path.relpath(args.out, ROOT)}")


if __name__ == "__main__":
    main()
