#!/usr/bin/env python3
"""Regenerates tests/data/golden_types.json: llama.cpp's own next-token log-probabilities on the
embedded SmolLM2 re-quantized by llama-quantize to every preset (scripts/make_test_models.sh
smollm2), so that each weight type's kernels are checked against llama.cpp's on the same bytes.

    scripts/make_test_models.sh smollm2       # once: the requantized files (builds llama-quantize)
    python3 scripts/make_golden_types.py [--presets Q4_K_M,Q6_K] [--check]

For every preset file it starts llama.cpp's `llama-server` (built by scripts/build_llama_tools.sh,
2 threads) and asks, for each prompt below, for a greedy (temperature 0) continuation of
STEPS tokens with the top-TOP log-probabilities at every step (`n_probs`: log-softmax of the raw
logits over the whole vocabulary, before any sampler). The file records each preset file's
SHA-256: tests/e2e/golden_types_models.sh checks that CI's llama-quantize made the same bytes.
lazyattn never links llama.cpp: llama-server is an external reference here.
"""
import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from make_golden import LOGIT_PROMPTS, RAW_GREEDY, dumps, rnd  # noqa: E402

PRESETS = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_M", "Q4_K_S", "Q4_K_M", "Q5_K_M",
           "Q6_K", "F16", "BF16"]
PREFIX = "SmolLM2-135M-Instruct-requant"
STEPS = 12
TOP = 10
THREADS = 2
# Short prompts run the decode kernels from the first token; the two long ones (150-250 tokens)
# run the prefill tiles.
PROMPTS = [("raw%d" % i, t) for i, t in enumerate(RAW_GREEDY)] + \
          [(name, text) for name, text in LOGIT_PROMPTS if name in ("prose", "rag")]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)


class Server:
    def __init__(self, binary, model):
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "-m", model, "--port", str(self.port), "--host", "127.0.0.1", "-t", str(THREADS),
             "-tb", str(THREADS), "-c", "2048", "-np", "1", "--no-webui", "--seed", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.close()
        raise RuntimeError(f"llama-server did not become ready for {model}")

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def run_preset(binary, path):
    server = Server(binary, path)
    try:
        cases = []
        for name, text in PROMPTS:
            ids = post(server.port, "/tokenize", {"content": text, "add_special": False,
                                                  "parse_special": True})["tokens"]
            r = post(server.port, "/completion", {
                "prompt": ids, "n_predict": STEPS, "n_probs": TOP, "temperature": 0.0,
                "cache_prompt": False, "return_tokens": True, "ignore_eos": True,
                "samplers": ["top_k"], "top_k": 1})
            steps = r["completion_probabilities"]
            cases.append({
                "name": name, "prompt_ids": ids,
                "output_ids": [int(s["id"]) for s in steps],
                "top": [[[int(t["id"]), rnd(t["logprob"])] for t in s["top_logprobs"]] for s in steps]})
        return cases
    finally:
        server.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default=",".join(PRESETS))
    ap.add_argument("--models", default=os.path.join(ROOT, "models"))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "golden_types.json"))
    ap.add_argument("--check", action="store_true", help="compare with the existing file instead of writing it")
    args = ap.parse_args()

    env = subprocess.run([os.path.join(HERE, "build_llama_tools.sh"), "--env"], capture_output=True, text=True,
                         check=True).stdout
    bin_dir = dict(line.split("=", 1) for line in env.splitlines() if line.startswith("LLAMA_TOOLS_BIN="))
    binary = os.path.join(bin_dir["LLAMA_TOOLS_BIN"], "llama-server")
    if not os.access(binary, os.X_OK):
        sys.exit(f"{binary} is missing: run scripts/build_llama_tools.sh")
    stamp = subprocess.run([binary, "--version"], capture_output=True, text=True).stderr.strip().splitlines()

    presets = {}
    for p in args.presets.split(","):
        path = os.path.join(args.models, f"{PREFIX}.{p}.gguf")
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: run scripts/make_test_models.sh smollm2")
        t0 = time.time()
        presets[p] = {"file": os.path.basename(path), "sha256": sha256(path), "cases": run_preset(binary, path)}
        print(f"{p}: {len(presets[p]['cases'])} prompts x {STEPS} steps ({time.time() - t0:.0f} s)", flush=True)

    doc = {"llama_cpp": stamp[0] if stamp else "", "n_threads": THREADS, "steps": STEPS, "top": TOP,
           "note": "per preset: the requantized SmolLM2 file's SHA-256 and, per prompt, llama-server's greedy "
                   "continuation (output_ids, EOS ignored) with the top-10 [id, log-probability] at each step "
                   "(n_probs: log-softmax of the raw logits over the whole vocabulary). Compare teacher-forced: "
                   "run prompt_ids + output_ids through the engine once and read the log-softmax at each step.",
           "presets": presets}
    text = dumps(doc) + "\n"
    if args.check:
        old = open(args.out, encoding="utf-8").read() if os.path.exists(args.out) else None
        print("identical" if old == text else "DIFFERENT")
        return 0 if old == text else 1
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(args.out, ROOT)} ({os.path.getsize(args.out)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
