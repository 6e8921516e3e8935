#!/usr/bin/env python3
"""The distillation objective of the block fine-tuning recipe, on a tiny synthetic llama (about a
minute in CI after the install):

  1. the teacher's logits (distill.py: the LoRA-wrapped model with its adapters disabled, full
     attention) equal lazyattn's `none` logits for the same weights (la_rag_layout logits, fp32
     weights and KV) within 1e-4 of the largest logit, while the adapters enabled give other
     logits (so disabling them is what makes the teacher); the cached top-k KL is exact at
     k = vocab and zero for the teacher against itself;
  2. a few distillation steps (--objective distill, anchored layout, the default data: reading
     questions over Python's reference and license texts, 2Wiki train split, gist questions
     without answers) lower the mean KL(full || lazy) on the held-out prompts the recipe writes;
  3. the exported GGUF loads and generates in lazyattn, `info` reads lazyattn.block_finetuned
     back, and the sidecar JSON records the objective and the teacher cache's size;
  4. bad input is refused naming the item (FILE:LINE) with nothing written: a dataset line
     without a question, a line without an answer under --objective sft, documents longer than
     --max-tokens, a teacher that cannot be loaded.

Exit 0 on success, 1 on a failure, 77 (skipped) only when PyPI cannot be reached and no wheels
are cached.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

from harness import FAILURES, ROOT, check, finetune_python, llama_gguf_py, sh, write_tiny_llama

FT = os.path.join(ROOT, "scripts/finetune")


TEACHER_CHECK = r"""
import json, sys
import numpy as np, torch
sys.path.insert(0, sys.argv[1])
import block_attention, distill
from transformers import AutoModelForCausalLM
from peft import LoraConfig, get_peft_model
model_path, tmp = sys.argv[2], sys.argv[3]
import os
d, f = os.path.split(model_path)
torch.manual_seed(0)
m = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
m = get_peft_model(m, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"],
                                 task_type="CAUSAL_LM"))
with torch.no_grad():  # adapters that change the output (PEFT starts B at zero)
    for n, p in m.named_parameters():
        if "lora_B" in n:
            p.normal_(0, 0.5)
lay = json.load(open(os.path.join(tmp, "layout.json")))
eng = np.fromfile(os.path.join(tmp, "none.f32"), dtype=np.float32).reshape(-1, lay["vocab"])
L = block_attention.make_layout(lay["segments"], lay["preamble"], lay["tail"], "full")
with torch.no_grad():
    with distill.frozen_base(m) as t:
        teacher = block_attention.block_forward(t, L)
    adapted = block_attention.block_forward(m, L)
rel = float((teacher.numpy() - eng).__abs__().max() / np.abs(eng).max())
sep = float((adapted - teacher).abs().max() / teacher.abs().max())
g = torch.Generator().manual_seed(1)
student = teacher + torch.randn(teacher.shape, generator=g)
exact = float(distill.full_kl(teacher, student))
topall = float(distill.topk_kl(distill.topk_entry(teacher, teacher.shape[-1]), student))
top64 = float(distill.topk_kl(distill.topk_entry(teacher, 64), student))
self64 = float(distill.topk_kl(distill.topk_entry(teacher, 64), teacher))
print(json.dumps({"rel": rel, "sep": sep, "exact": exact, "topall": topall, "top64": top64, "self64": self64}))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lazyattn", required=True)
    ap.add_argument("--layout-bin", required=True)
    ap.add_argument("--vocab-gguf", default=os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    a = ap.parse_args()
    py = finetune_python()
    if isinstance(py, int):
        return py
    t0 = time.time()
    gguf_py = llama_gguf_py()
    if gguf_py is None:
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        tiny = os.path.join(tmp, "tiny-llama.F32.gguf")
        if not write_tiny_llama(py, tiny, a.vocab_gguf, gguf_py):
            return 1

        # 1. the teacher is the full-attention forward, as the engine's none computes it.
        req = os.path.join(tmp, "request.json")
        with open(os.path.join(ROOT, "data/2wiki_sample.jsonl")) as f:
            item = json.loads(f.readline())
        with open(req, "w") as f:
            f.write(json.dumps({"system": "Answer from the documents.", "documents": item["documents"][:3],
                                "question": item["question"], "answer": item["answers"][0]}) + "\n")
        lg = os.path.join(tmp, "logits")
        r = sh([a.layout_bin, "logits", tiny, req, lg, "--variant", "none"])
        check(r.returncode == 0, "la_rag_layout logits --variant none" + ("" if r.returncode == 0 else r.stderr[-800:]))
        r = sh([py, "-c", TEACHER_CHECK, FT, tiny, lg])
        res = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {}
        if r.returncode:
            print(r.stderr[-3000:])
        check(res.get("rel", 1) <= 1e-4, f"teacher logits = lazyattn none within 1e-4 of the largest logit ({res.get('rel')})")
        check(res.get("sep", 0) > 1e-2, f"with its adapters enabled the model's logits differ ({res.get('sep')})")
        check(abs(res.get("topall", 1) - res.get("exact", 0)) <= 1e-4 * max(1.0, res.get("exact", 0)),
              f"top-k KL at k = vocab is the exact KL ({res.get('topall')} vs {res.get('exact')})")
        check(0 < res.get("top64", 0) <= res.get("exact", 0) + 1e-5 and abs(res.get("self64", 1)) < 1e-5,
              f"top-64 KL is a lower bound, zero against itself ({res.get('top64')}, {res.get('self64')})")

        # 2. a few distillation steps lower KL(full || lazy) on held-out prompts.
        out = os.path.join(tmp, "ft")
        ft = [py, os.path.join(FT, "finetune.py"), "--model", tiny, "--out", out, "--layout-bin", a.layout_bin,
              "--objective", "distill", "--layout", "anchored", "--lora-rank", "8", "--lora-alpha", "16",
              "--lr", "3e-3", "--warmup-steps", "1", "--batch", "4", "--max-steps", "6", "--prose-tasks", "12",
              "--wiki-repeats", "1", "--doc-counts", "2", "3", "--max-prompt-words", "160", "--heldout-prompts", "8",
              "--full-attention-share", "0.25", "--prose-share", "0.25", "--outtype", "F32", "--threads", "2",
              "--teacher-max-new", "8"]
        r = sh(ft)
        gguf = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        check(r.returncode == 0 and gguf.endswith(".gguf") and os.path.exists(gguf),
              f"finetune.py --objective distill runs ({gguf})" + ("" if r.returncode == 0 else r.stderr[-3000:]))
        if r.returncode:
            return 1
        print("\n".join(l for l in r.stderr.splitlines() if l.startswith("[finetune]")))
        with open(os.path.join(out, "data/summary.json")) as f:
            summary = json.load(f)
        kinds = summary["kinds"]
        check(not any(k.startswith("synthetic") for k in kinds) and kinds.get("prose-task/gist", 0) > 0,
              f"the default data has no benchmark task and has questions without answers ({kinds})")
        prompts = os.path.join(out, "data/heldout_prompts.jsonl")
        kl = {}
        for name, model in (("before", tiny), ("after", gguf)):
            r = sh([py, os.path.join(FT, "kl_eval.py"), model, "--prompts", prompts, "--layout", "anchored",
                    "--layout-bin", a.layout_bin, "--threads", "2", "--limit", "10"])
            kl[name] = json.loads(r.stdout.strip().splitlines()[-1])["kl_full_lazy"] if r.returncode == 0 else None
            if r.returncode:
                print(r.stderr[-2000:])
        check(kl["before"] is not None and kl["after"] is not None and kl["after"] < 0.9 * kl["before"],
              f"held-out KL(full || lazy) falls: {kl['before']} -> {kl['after']}")

        # 3. the exported GGUF loads and carries its metadata.
        r = sh([a.lazyattn, "info", "--model", gguf])
        check(r.returncode == 0 and "block fine-tuned: anchored" in r.stdout, "lazyattn info: block fine-tuned: anchored")
        r = sh([a.lazyattn, "generate", "--model", gguf, "--chat", "--prompt", "Hello", "--max-tokens", "4"])
        check(r.returncode == 0, "the exported GGUF generates in lazyattn")
        with open(gguf + ".json") as f:
            side = json.load(f)
        check(side.get("objective") == "distill" and side.get("teacher", {}).get("samples", 0) > 0,
              f"the sidecar records the objective and the teacher cache ({side.get('teacher')})")

        # 4. bad input: named, nothing written.
        base = [py, os.path.join(FT, "finetune.py"), "--model", tiny, "--layout-bin", a.layout_bin,
                "--max-steps", "1", "--outtype", "F32", "--threads", "2"]

        def bad(name, lines, extra, want):
            path = os.path.join(tmp, name + ".jsonl")
            with open(path, "w") as f:
                f.write("".join(json.dumps(l) + "\n" for l in lines))
            o = os.path.join(tmp, "out-" + name)
            r = sh(base + ["--out", o, "--data", path] + extra)
            left = [f for f in (os.listdir(o) if os.path.isdir(o) else [])]
            named = all(w in r.stderr for w in want)
            check(r.returncode != 0 and named and not any(f.endswith(".gguf") for f in left)
                  and not os.path.exists(os.path.join(o, "data/rendered.jsonl")),
                  f"{name}: refused naming the item {want}" + ("" if named else ": " + r.stderr[-600:]))

        good = {"question": "Who?", "documents": ["Alice wrote it."], "answer": "Alice"}
        bad("no-question", [good, {"documents": ["In 1990."], "answer": "1990"}], [], ["no-question.jsonl:2", "question"])
        bad("sft-no-answer", [good, {"question": "When?", "documents": ["In 1990."]}], ["--objective", "sft"],
            ["sft-no-answer.jsonl:2", "answer"])
        bad("too-long", [good, {"question": "Who?", "documents": ["word " * 3000]}], ["--max-tokens", "1024"],
            ["too-long.jsonl:2", "--max-tokens"])
        bad("teacher", [good], ["--teacher", os.path.join(tmp, "request.json")], ["teacher", "cannot be loaded"])

    print(f"[test] {time.time() - t0:.0f} s after the install; {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
