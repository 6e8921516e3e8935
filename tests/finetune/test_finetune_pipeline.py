#!/usr/bin/env python3
"""The block fine-tuning recipe end to end on a tiny synthetic model (a few minutes in CI):

  1. scripts/finetune/install.sh (cached wheels reused) and a 2-layer llama GGUF at F32 with
     SmolLM2's tokenizer and chat template (scripts/write_synthetic_gguf.py);
  2. scripts/finetune/finetune.py --objective sft, anchored layout, LoRA, several epochs over a
     few of bench quality's kv/hop/agg tasks (the opt-in --synthetic source):
     the loss of the last epoch is below that of the first;
  3. the exported GGUF loads in lazyattn, `lazyattn info` reads lazyattn.block_finetuned back
     ("anchored") and `lazyattn serve` defaults to document_reuse anchor for it;
  4. the torch oracle (scripts/finetune/oracle.py): the exported weights give the same tail
     logits in PyTorch with the block mask as in lazyattn's lazy, lazy-k and block-attn (plain
     and anchored) and none, fp32 weights and KV, within 1e-4 of the largest logit;
  5. bad input: a dataset line without an answer (under --objective sft; distill uses the
     teacher's reply) and a document longer than the context are refused with an error naming
     the line, and no GGUF is written.

Exit 0 on success, 1 on a failure, 77 (skipped) only when PyPI cannot be reached and no wheels
are cached.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from harness import FAILURES, ROOT, check, finetune_python, llama_gguf_py, sh, write_tiny_llama



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lazyattn", required=True)
    ap.add_argument("--layout-bin", required=True)
    ap.add_argument("--vocab-gguf", default=os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    a = ap.parse_args()
    t0 = time.time()

    py = finetune_python()
    if isinstance(py, int):
        return py
    print(f"[test] environment ready in {time.time() - t0:.0f} s: {py}", flush=True)
    t1 = time.time()
    gguf_py = llama_gguf_py()
    if gguf_py is None:
        return 1
    if not os.path.exists(a.vocab_gguf):
        print(f"FAIL: {a.vocab_gguf} is missing (make deps installs the embedded model)")
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        tiny = os.path.join(tmp, "tiny-llama.F32.gguf")
        if not write_tiny_llama(py, tiny, a.vocab_gguf, gguf_py):
            return 1

        # 2. fine-tune: few samples, several epochs, a high learning rate: the loss must fall.
        out = os.path.join(tmp, "ft")
        ft = [py, os.path.join(ROOT, "scripts/finetune/finetune.py"), "--model", tiny, "--out", out,
              "--layout-bin", a.layout_bin, "--layout", "anchored", "--method", "lora", "--lora-rank", "8",
              "--lora-alpha", "16", "--lr", "3e-3", "--warmup-steps", "1", "--batch", "4", "--epochs", "6",
              "--objective", "sft", "--synthetic", "6", "--prose-tasks", "0", "--wiki-repeats", "0", "--doc-counts", "2", "3", "--max-prompt-words", "160",
              "--full-attention-share", "0.25", "--prose-share", "0.25", "--checkpoint-every", "3",
              "--outtype", "F32", "--threads", "2"]
        r = sh(ft)
        gguf = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        check(r.returncode == 0 and gguf.endswith(".gguf") and os.path.exists(gguf),
              f"finetune.py runs and its last line is the GGUF ({gguf})" + ("" if r.returncode == 0 else ": " + r.stderr[-3000:]))
        if r.returncode:
            return 1
        print("\n".join(l for l in r.stderr.splitlines() if l.startswith("[finetune]")))
        ckpts = sorted(os.listdir(os.path.join(out, "checkpoints")))
        with open(os.path.join(out, "checkpoints", ckpts[-1], "state.json")) as f:
            losses = [l[2] for l in json.load(f)["losses"]]
        per_epoch = max(1, len(losses) // 6)
        first, last = sum(losses[:per_epoch]) / per_epoch, sum(losses[-per_epoch:]) / per_epoch
        check(last < 0.9 * first, f"the loss falls: first epoch {first:.3f}, last epoch {last:.3f} ({len(losses)} steps)")
        check(len(ckpts) >= 2, f"checkpoints are written every N steps ({ckpts})")

        # The schedule: linear warm-up, cosine to --min-lr-ratio at the run's end (steps or minutes,
        # whichever first), or constant.
        r = sh([py, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import finetune as f\n"
                "a = f.parse_args(['--lr', '1e-3', '--warmup-steps', '4', '--minutes', '10'])\n"
                "print(f.learning_rate(a, 0, 0, 100), f.learning_rate(a, 50, 0, 100), f.learning_rate(a, 100, 0, 100),"
                " f.learning_rate(a, 10, 600, 100))\n"
                "a = f.parse_args(['--lr', '1e-3', '--warmup-steps', '4', '--lr-schedule', 'constant'])\n"
                "print(f.learning_rate(a, 99, 0, 100))", os.path.join(ROOT, "scripts/finetune")])
        lrs = [float(x) for x in r.stdout.split()] if r.returncode == 0 else []
        check(len(lrs) == 5 and abs(lrs[0] - 0.25e-3) < 1e-9 and abs(lrs[1] - 0.55e-3) < 1e-9 and
              abs(lrs[2] - 1e-4) < 1e-9 and abs(lrs[3] - 1e-4) < 1e-9 and abs(lrs[4] - 1e-3) < 1e-9,
              f"warm-up, cosine to 10% by steps or by minutes, constant: {lrs} {r.stderr[-500:]}")

        # A checkpoint exports with the flags it was trained with (anchored, LoRA rank 8), not the
        # export command's defaults (plain, rank 32: its weights would not even load).
        ckpt_gguf = os.path.join(tmp, "ckpt.gguf")
        r = sh([py, os.path.join(ROOT, "scripts/finetune/finetune.py"), "--model", tiny, "--out", out,
                "--layout-bin", a.layout_bin, "--outtype", "F32", "--threads", "2",
                "--export-checkpoint", os.path.join(out, "checkpoints", ckpts[0]), "--output-gguf", ckpt_gguf])
        info = sh([a.lazyattn, "info", "--model", ckpt_gguf]) if r.returncode == 0 else r
        check(r.returncode == 0 and "block fine-tuned: anchored" in info.stdout,
              "--export-checkpoint uses the checkpoint's own flags" + ("" if r.returncode == 0 else ": " + r.stderr[-1500:]))

        # --resume continues from the last checkpoint (one more epoch).
        r = sh(ft[:ft.index("--epochs") + 1] + ["7"] + ft[ft.index("--epochs") + 2:] + ["--resume"])
        check(r.returncode == 0 and "resumed from" in r.stderr, "--resume continues from the latest checkpoint")

        # 3. the engine reads it.
        r = sh([a.lazyattn, "info", "--model", gguf])
        check(r.returncode == 0 and "block fine-tuned: anchored" in r.stdout,
              "lazyattn info prints lazyattn.block_finetuned = anchored")
        r = sh([a.lazyattn, "generate", "--model", gguf, "--chat", "--prompt", "Hello", "--max-tokens", "4"])
        check(r.returncode == 0, "the exported GGUF loads and generates in lazyattn")
        srv = subprocess.Popen([a.lazyattn, "serve", "--model", gguf, "--port", "0", "--kv-cache-mb", "16"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        lines = []
        try:
            deadline = time.time() + 60
            while time.time() < deadline and not any("document_reuse" in l for l in lines):
                line = srv.stdout.readline()
                if not line:
                    break
                lines.append(line)
        finally:
            srv.terminate()
            srv.wait(timeout=30)
        check(any("document_reuse anchor" in l for l in lines), "serve's default document_reuse follows the model: anchor")

        # 4. the oracle on the exported weights.
        r = sh([py, os.path.join(ROOT, "scripts/finetune/oracle.py"), gguf, "--layout-bin", a.layout_bin,
                "--tol", "1e-4", "--json", os.path.join(tmp, "oracle.json")])
        print("\n".join(l for l in r.stdout.splitlines() if l.startswith("[oracle]")))
        check(r.returncode == 0, "torch and lazyattn logits agree within 1e-4 in every segment mode")

        # 5. bad input.
        bad = os.path.join(tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write(json.dumps({"question": "Who?", "documents": ["Alice wrote it."], "answer": "Alice"}) + "\n")
            f.write(json.dumps({"question": "When?", "documents": ["In 1990."]}) + "\n")
        out2 = os.path.join(tmp, "bad-out")
        args2 = [py, os.path.join(ROOT, "scripts/finetune/finetune.py"), "--model", tiny, "--out", out2,
                 "--layout-bin", a.layout_bin, "--data", bad, "--max-steps", "1", "--outtype", "F32",
                 "--objective", "sft"]
        r = sh(args2)
        check(r.returncode != 0 and "bad.jsonl:2" in r.stderr and "answer" in r.stderr,
              "a dataset line without an answer is refused under --objective sft naming the line")
        check(not os.path.isdir(out2) or not any(f.endswith(".gguf") for f in os.listdir(out2)),
              "nothing is exported after bad input")
        with open(bad, "w") as f:
            f.write(json.dumps({"question": "Who?", "documents": ["word " * 3000], "answer": "Alice"}) + "\n")
        r = sh(args2 + ["--max-tokens", "1024"])
        check(r.returncode != 0 and "bad.jsonl:1" in r.stderr and "--max-tokens" in r.stderr,
              "a document longer than the context is refused naming the line")

    print(f"[test] {time.time() - t1:.0f} s after the install; {len(FAILURES)} failed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
