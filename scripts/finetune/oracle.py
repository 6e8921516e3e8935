#!/usr/bin/env python3
"""Torch against lazyattn: the same weights, the same multi-document prompt, the same logits.

The engine (la_rag_layout logits: fp32 weights, fp32 KV) computes the tail logits of one RAG
request under each segment cache mode (lazy, lazy-k, block-attn), with plain and anchored
documents, and under full attention (none); block_attention.py computes the same function in
PyTorch from the same GGUF (transformers' GGUF loader) with the block mask the recipe trains
with. They must agree on every tail row (question, assistant header and answer tokens):

    max |torch - engine| <= TOL * max |logit|      (TOL = 1e-4 by default)

Both sides are fp32 with fp32 accumulation; they differ only in summation order (OpenBLAS and
the engine's tiled kernels against torch's GEMM) and in how RoPE angles are computed (the engine
tabulates them in double, torch in float), which measures at 1e-6 .. 3e-5 of the largest logit
on SmolLM2-135M. A wrong mask, position or rotation moves logits by percents. The layout itself
(token ids) is the engine's, so the torch side checks the kernels' math, not the tokenizer.

  oracle.py MODEL.gguf [--request R.json] [--tol 1e-4]    exit 1 on any disagreement
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

# variant -> the torch layout it computes
VARIANTS = {"lazy": "plain", "lazy-k": "plain", "block-attn": "plain",
            "lazy:anchor": "anchored", "lazy-k:anchor": "anchored", "block-attn:anchor": "anchored",
            "none": "full"}


def default_request(wiki_path):
    with open(wiki_path, encoding="utf-8") as f:
        item = json.loads(f.readline())
    return {"system": "Answer the question using the documents.", "documents": item["documents"][:4],
            "question": item["question"], "answer": item["answers"][0]}


def run(model_path, request, tol, layout_bin, threads=0, log=sys.stdout):
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM
    import block_attention

    with tempfile.TemporaryDirectory() as tmp:
        req_path = os.path.join(tmp, "request.json")
        with open(req_path, "w") as f:
            f.write(json.dumps(request) + "\n")
        cmd = [layout_bin, "logits", model_path, req_path, tmp]
        for v in VARIANTS:
            cmd += ["--variant", v]
        if threads:
            cmd += ["--threads", str(threads)]
        subprocess.run(cmd, check=True)
        with open(os.path.join(tmp, "layout.json")) as f:
            lay = json.load(f)
        vocab = lay["vocab"]
        engine = {v: np.fromfile(os.path.join(tmp, v + ".f32"), dtype=np.float32).reshape(-1, vocab)
                  for v in VARIANTS}

    d, fname = os.path.split(os.path.abspath(model_path))
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=fname, dtype=torch.float32).eval()
    results = {}
    torch_logits = {}
    n_tokens = sum(len(s) for s in lay["segments"]) + len(lay["tail"])
    print(f"[oracle] {model_path}: {len(lay['segments'])} segments ({'preamble + ' if lay['preamble'] else ''}"
          f"{len(lay['segments']) - int(lay['preamble'])} documents), {len(lay['tail'])} tail rows, "
          f"{n_tokens} tokens", file=log)
    ok = True
    with torch.no_grad():
        for layout in ("plain", "anchored", "full"):
            L = block_attention.make_layout(lay["segments"], lay["preamble"], lay["tail"], layout)
            torch_logits[layout] = block_attention.block_forward(model, L).numpy()
        for v, layout in VARIANTS.items():
            t, e = torch_logits[layout], engine[v]
            if t.shape != e.shape:
                raise SystemExit(f"error: shapes differ for {v}: torch {t.shape}, engine {e.shape}")
            diff = float(np.abs(t - e).max())
            scale = float(np.abs(e).max())
            rel = diff / max(scale, 1e-30)
            agree = bool((t.argmax(-1) == e.argmax(-1)).mean() == 1.0)
            results[v] = {"max_abs_diff": diff, "max_abs_logit": scale, "relative": rel, "argmax_agree": agree}
            good = rel <= tol
            ok &= good
            print(f"[oracle] {v:18s} (torch {layout:8s}) max|diff| {diff:.3e}  / max|logit| {scale:.2f} "
                  f"= {rel:.2e}  argmax {'same' if agree else 'DIFFERS'}  {'ok' if good else 'FAIL'}", file=log)
    # The modes must also differ from each other where the math differs, or the check is vacuous.
    sep_pa = float(np.abs(torch_logits["plain"] - torch_logits["anchored"]).max())
    sep_pf = float(np.abs(torch_logits["plain"] - torch_logits["full"]).max())
    print(f"[oracle] separation: plain vs anchored {sep_pa:.3e}, plain vs full {sep_pf:.3e}", file=log)
    for name, sep in (("plain vs anchored", sep_pa), ("plain vs full", sep_pf)):
        if sep <= 10 * tol * max(r["max_abs_logit"] for r in results.values()):
            print(f"[oracle] FAIL: {name} differ by only {sep:.3e}: the prompt does not tell the layouts apart",
                  file=log)
            ok = False
    return ok, results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--request", help="one JSON line: system, documents, question, answer (default: a 2Wiki question)")
    ap.add_argument("--wiki", default=os.path.join(ROOT, "data/2wiki_sample.jsonl"))
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("--layout-bin", default=os.path.join(ROOT, "build/tools/la_rag_layout"))
    ap.add_argument("--json", help="write the per-variant differences here")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.request:
        with open(a.request) as f:
            request = json.loads(f.readline())
    else:
        request = default_request(a.wiki)
    ok, results = run(a.model, request, a.tol, a.layout_bin, a.threads)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"tolerance": a.tol, "variants": results}, f, indent=1)
    print("[oracle] " + ("PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
