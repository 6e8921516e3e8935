#!/usr/bin/env python3
"""A/B of two lazyattn builds, side by side on one machine: the speed check a structural change
owes (issue 60: "speed unchanged"). Rounds alternate the builds (A B, B A, ...) so drift on a
shared machine falls on both; each round runs `bench speed` (pp512 / tg128, the figures
llama-bench quotes) and the RAG headline stream in-process (`bench rag`, lazy and block-attn
under the headline KV budget). Prints each metric's median per build and the ratio B/A.

    python3 bench/ab_compare.py --a OLD/lazyattn --b build/lazyattn --rounds 3 [--rag-requests 40]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile


def run_speed(binary, threads):
    out = subprocess.run([binary, "bench", "speed", "--threads", str(threads), "--prompt-tokens", "512",
                          "--gen-tokens", "128", "--json"], capture_output=True, text=True, check=True).stdout
    row = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    return {"pp512 tok/s": row["prefill_tok_s"], "tg128 tok/s": row["decode_tok_s"]}


def run_rag(binary, threads, requests):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([binary, "bench", "rag", "--threads", str(threads), "--docs", "40", "--doc-tokens", "512",
                        "--k", "5", "--zipf", "1.2", "--tail-tokens", "32", "--output-tokens", "16", "--clients", "4",
                        "--kv-budget-docs", "13.34", "--requests", str(requests), "--warmup-requests", "16",
                        "--modes", "lazy", "block-attn", "--json", f.name],
                       capture_output=True, text=True, check=True)
        runs = json.load(open(f.name))["runs"]
    out = {}
    for r in runs:
        out[r["label"] + " TTFT p50 ms"] = r["ttft_p50_ms"]
        out[r["label"] + " req/s"] = r["requests_per_s"]
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, help="the baseline build's lazyattn binary")
    p.add_argument("--b", required=True, help="the candidate build's lazyattn binary")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rag-requests", type=int, default=40)
    p.add_argument("--no-rag", action="store_true")
    args = p.parse_args()
    samples = {"A": {}, "B": {}}
    for i in range(args.rounds):
        order = [("A", args.a), ("B", args.b)] if i % 2 == 0 else [("B", args.b), ("A", args.a)]
        for name, binary in order:
            got = run_speed(binary, args.threads)
            if not args.no_rag:
                got.update(run_rag(binary, args.threads, args.rag_requests))
            for k, v in got.items():
                samples[name].setdefault(k, []).append(v)
            print(f"[ab] round {i + 1}/{args.rounds} {name}: " + ", ".join(f"{k} {v:.1f}" for k, v in got.items()),
                  file=sys.stderr, flush=True)
    print("| metric | A (median) | B (median) | B / A |")
    print("|---|---:|---:|---:|")
    for k in samples["A"]:
        a, b = statistics.median(samples["A"][k]), statistics.median(samples["B"][k])
        print(f"| {k} | {a:.1f} | {b:.1f} | {b / a:.3f} |")


if __name__ == "__main__":
    main()
