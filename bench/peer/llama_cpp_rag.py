#!/usr/bin/env python3
"""llama.cpp (llama-cpp-python) as the external peer of `lazyattn bench rag`.

Reads the request stream that `lazyattn bench rag --export-workload FILE` wrote (the very same
token ids, so the digest matches) and serves it the way llama.cpp serves a RAG prompt: one
sequence, its prompt cache reusing the longest common prefix with the previous request (which is
what prefix caching can do), documents flattened in request order. Requests run one after another
(llama.cpp's Python binding has no batching), so compare with lazyattn's numbers at 1 client.

    python3 bench/peer/llama_cpp_rag.py --workload bench/out/workload.json --requests 8 --json out.json
"""
import argparse
import json
import statistics
import time

import llama_cpp
import numpy as np


def last_argmax(llm):
    """Greedy token from the logits of the last evaluated position (only that row is computed)."""
    return int(np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).argmax())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--workload", required=True)
    ap.add_argument("--requests", type=int, default=0, help="first N requests (0 = all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    with open(args.workload) as f:
        w = json.load(f)
    reqs = w["requests"][: args.requests or None]
    longest = max(sum(len(s) for s in r["segments"]) + len(r["tail"]) + r["max_tokens"] for r in reqs)
    llm = llama_cpp.Llama(model_path=args.model, n_ctx=longest + 16, n_batch=512, n_ubatch=512,
                          n_threads=args.threads, n_threads_batch=args.threads, verbose=False)
    ttft, e2e, reused, computed = [], [], 0, 0
    cached = []  # tokens whose KV the context holds
    t_start = time.perf_counter()
    for i, r in enumerate(reqs):
        prompt = [t for s in r["segments"] for t in s] + r["tail"]
        lcp = 0
        while lcp < min(len(prompt) - 1, len(cached)) and prompt[lcp] == cached[lcp]:
            lcp += 1
        t0 = time.perf_counter()
        llm.n_tokens = lcp  # keep the common prefix (eval drops the KV after it), compute the rest
        llm.eval(prompt[lcp:])
        token = last_argmax(llm)
        ttft.append((time.perf_counter() - t0) * 1000)
        out = [token]
        for _ in range(r["max_tokens"] - 1):
            llm.eval([token])
            token = last_argmax(llm)
            out.append(token)
        e2e.append((time.perf_counter() - t0) * 1000)
        cached = prompt + out[:-1]
        reused += lcp
        computed += len(prompt) - lcp
        print(f"\r  llama.cpp {i + 1}/{len(reqs)}", end="", flush=True)
    wall = time.perf_counter() - t_start
    print()
    res = {"engine": "llama.cpp", "requests": len(reqs), "digest": w.get("digest"), "ttft_ms": ttft, "e2e_ms": e2e,
           "ttft_mean_ms": statistics.mean(ttft), "ttft_p50_ms": statistics.median(ttft),
           "requests_per_s": len(reqs) / wall, "reused_tokens": reused, "prefill_tokens": computed}
    print(f"llama.cpp: {len(reqs)} requests, TTFT mean {res['ttft_mean_ms']:.1f} ms, p50 {res['ttft_p50_ms']:.1f} ms, "
          f"{res['requests_per_s']:.3f} req/s, prefilled {computed}, reused {reused}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
