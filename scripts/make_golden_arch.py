#!/usr/bin/env python3
"""Golden greedy continuations from llama.cpp on lazyattn's synthetic models, one per architecture.

For each architecture below, la_make_synthetic_model (tools/) writes a small random-weight GGUF
(F32 weights, laid out as llama.cpp's converter writes that architecture); llama-server runs it
greedily from fixed prompt token ids (f32 KV cache, no flash attention, so its own noise is
small) and records, per generated step, the chosen token and llama.cpp's top-k log-probabilities
(absent for a token that ends inside a UTF-8 character: llama-server withholds those).
The JSON names each file's FNV-1a 64 hash: tests/unit/model/test_golden_arch.cpp rewrites the
same file from the same options, checks the hash (so the golden and the test read the same
model) and compares lazyattn's continuation and log-probabilities with llama.cpp's.

  eval "$(scripts/build_llama_tools.sh --env)"
  cmake --build build --target la_make_synthetic_model
  python3 scripts/make_golden_arch.py --tool build/tools/la_make_synthetic_model \\
      --server "$LLAMA_TOOLS_BIN/llama-server" --out tests/data/golden_arch.json
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

# name -> la_make_synthetic_model arguments. The test holds the same table (synthetic options);
# the hash check catches any drift between the two.
ARCHITECTURES = {
    "llama": ["--arch", "llama"],
    "llama3": ["--arch", "llama", "--llama3-rope-freqs", "--rope-base", "500000"],
    "qwen2": ["--arch", "qwen2"],
    "qwen3": ["--arch", "qwen3", "--head-dim", "32"],
    "gemma3": ["--arch", "gemma3", "--head-dim", "32", "--sliding-window", "8",
               "--sliding-window-pattern", "2", "--rope-base", "1000000"],
    "phi3": ["--arch", "phi3", "--phi3-rope-factors", "--untied"],
    "phi3-partial": ["--arch", "phi3", "--phi3-rope-factors", "--rope-dims", "12"],
}
COMMON = ["--layers", "3", "--hidden", "64", "--heads", "4", "--kv-heads", "2", "--ffn", "128",
          "--ctx", "512", "--seed", "77"]
PROMPT_LENGTHS = [1, 9, 30]
NUM_PREDICT = 8
NUM_PROBS = 8
PORT = 18473


def fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def post(path: str, body: dict) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def wait_healthy(proc: subprocess.Popen, deadline_s: float = 60.0) -> None:
    t0 = time.time()
    while time.time() - t0 < deadline_s:
        if proc.poll() is not None:
            raise RuntimeError("llama-server exited early")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            pass
        time.sleep(0.3)
    raise RuntimeError("llama-server did not become healthy")


def run_arch(name: str, tool: str, server: str, workdir: str) -> dict:
    path = os.path.join(workdir, f"{name}.gguf")
    described = subprocess.run([tool, path] + ARCHITECTURES[name] + COMMON, check=True, capture_output=True,
                               text=True).stdout
    vocab_size = int(re.search(r"^vocab:\s+(\d+)", described, re.M).group(1))
    with open(path, "rb") as f:
        digest = fnv1a64(f.read())
    log = open(os.path.join(workdir, f"{name}.log"), "w")
    proc = subprocess.Popen([server, "-m", path, "-c", "512", "-t", "2", "-np", "1", "--host", "127.0.0.1",
                             "--port", str(PORT), "-ctk", "f32", "-ctv", "f32", "-fa", "off", "--no-warmup",
                             "--swa-full"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(proc)
        rng = random.Random(1000 + len(name))
        prompts = []
        for n in PROMPT_LENGTHS:
            ids = [rng.randrange(3, vocab_size) for _ in range(n)]
            # One token per request, the prompt growing by llama.cpp's own choice: llama-server
            # drops the probabilities of tokens that leave its text in the middle of a UTF-8
            # character (byte tokens, common in a random model), so a multi-token request would
            # lose every step after the first such token. Such a step keeps its id, no "top".
            context, steps = list(ids), []
            for _ in range(NUM_PREDICT):
                r = post("/completion", {"prompt": context, "n_predict": 1, "temperature": 0.0,
                                         "n_probs": NUM_PROBS, "cache_prompt": False, "ignore_eos": True,
                                         "return_tokens": True})
                token = r["tokens"][0]
                probs = r.get("completion_probabilities", [])
                top = [[t["id"], t["logprob"]] for t in probs[0]["top_logprobs"]] if probs else []
                if top and top[0][0] != token:
                    raise RuntimeError(f"{name}: greedy token {token} is not the top one {top[0]}")
                steps.append({"id": token, "top": top})
                context.append(token)
            prompts.append({"ids": ids, "steps": steps})
        return {"fnv1a64": digest, "args": ARCHITECTURES[name] + COMMON, "prompts": prompts}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tool", required=True, help="path of la_make_synthetic_model")
    ap.add_argument("--server", required=True, help="path of llama.cpp's llama-server")
    ap.add_argument("--out", default="tests/data/golden_arch.json")
    ap.add_argument("--only", nargs="*", help="architectures to run (default: all)")
    args = ap.parse_args()
    out = {"generator": "scripts/make_golden_arch.py", "num_predict": NUM_PREDICT, "architectures": {}}
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.only or ARCHITECTURES:
            print(f"[{name}] ...", flush=True)
            out["architectures"][name] = run_arch(name, args.tool, args.server, workdir)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
