#!/usr/bin/env python3
"""Mean KL(full || lazy) of a model on held-out prompts: how far the block-masked model's
distribution is from the same model's full-attention one, on the rows the recipe distills (the
tail: question, assistant header and answer tokens).

Prompts: render-input JSONL with answers (default: OUT/data/heldout_prompts.jsonl, which the
recipe writes: the held-out 2Wiki questions and reading questions over held-out prose passages,
none trained on). Both distributions come from block_attention.py on the GGUF as transformers
dequantizes it (the same forward the torch oracle checks against the engine's lazy and none).

  kl_eval.py MODEL.gguf --prompts heldout_prompts.jsonl [--reference BASE.gguf] [--layout plain]

With --reference, also KL(reference full || model lazy): the distillation objective's own
measure (the frozen starting model as the teacher). Prints one JSON object.
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


def load(path, torch):
    from transformers import AutoModelForCausalLM
    d, f = os.path.split(os.path.abspath(path))
    return AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32).eval()


def render(layout_bin, model_path, prompts_path, tmp):
    out = os.path.join(tmp, "rendered.jsonl")
    subprocess.run([layout_bin, "render", model_path, prompts_path, out], check=True)
    with open(out) as f:
        return [json.loads(l) for l in f if l.strip()]


def evaluate(model_path, prompts_path, layout_bin, layout="plain", reference=None, limit=0, threads=0):
    import torch
    import block_attention
    import distill
    if threads:
        torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory() as tmp:
        rows = render(layout_bin, model_path, prompts_path, tmp)
    if limit:
        rows = rows[:limit]
    model = load(model_path, torch)
    ref = load(reference, torch) if reference else None
    own, vs_ref, n_rows = [], [], 0
    with torch.no_grad():
        for r in rows:
            tail, idx = distill.sequence(r, r["answer"])
            lazy = block_attention.block_forward(model, block_attention.make_layout(r["segments"], r["preamble"], tail,
                                                                                    layout), idx)
            full = block_attention.block_forward(model, block_attention.make_layout(r["segments"], r["preamble"], tail,
                                                                                    "full"), idx)
            own.append(float(distill.full_kl(full, lazy)))
            if ref is not None:
                rf = block_attention.block_forward(ref, block_attention.make_layout(r["segments"], r["preamble"], tail,
                                                                                    "full"), idx)
                vs_ref.append(float(distill.full_kl(rf, lazy)))
            n_rows += len(idx)
    out = {"model": model_path, "prompts": len(rows), "rows": n_rows, "layout": layout,
           "kl_full_lazy": sum(own) / len(own), "per_prompt": own}
    if ref is not None:
        out["reference"] = reference
        out["kl_reference_full_lazy"] = sum(vs_ref) / len(vs_ref)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--prompts", required=True, help="render-input JSONL with answers")
    ap.add_argument("--reference", help="the base GGUF: also KL(reference full || model lazy)")
    ap.add_argument("--layout", choices=["plain", "anchored"], default="plain")
    ap.add_argument("--limit", type=int, default=0, help="only the first N prompts")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--layout-bin", default=os.path.join(ROOT, "build/tools/la_rag_layout"))
    ap.add_argument("--json", help="also write the result here")
    a = ap.parse_args()
    out = evaluate(a.model, a.prompts, a.layout_bin, a.layout, a.reference, a.limit, a.threads)
    text = json.dumps({k: v for k, v in out.items() if k != "per_prompt"})
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
