"""What the fine-tuning tests share: the checks they count, the recipe's Python environment,
llama.cpp's gguf-py, and the tiny synthetic llama they train (2 layers, hidden 64, F32, with
SmolLM2's tokenizer and chat template)."""
from __future__ import annotations

import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAILURES = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILURES.append(what)


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def finetune_python():
    """The recipe's interpreter (scripts/finetune/install.sh, cached wheels reused), or the exit
    code to return: 77 (skipped) only when PyPI cannot be reached and no wheels are cached."""
    r = sh([os.path.join(ROOT, "scripts/finetune/install.sh")])
    if r.returncode != 0:
        print(r.stderr[-3000:])
        if "pip download failed" in r.stderr:
            print("SKIP: PyPI unreachable and no cached wheels")
            return 77
        return 1
    return r.stdout.strip().splitlines()[-1]


def llama_gguf_py():
    """llama.cpp's gguf-py from its sources (scripts/build_llama_tools.sh), or None."""
    r = sh([os.path.join(ROOT, "scripts/build_llama_tools.sh"), "--sources"])
    if r.returncode != 0:
        print(r.stderr[-2000:])
        return None
    return re.search(r"^LLAMA_GGUF_PY=(.*)$", r.stdout, re.M).group(1)


def write_tiny_llama(py, path, vocab_gguf, gguf_py):
    """Writes the tiny llama GGUF; whether it was written (counted as a check)."""
    r = sh([py, os.path.join(ROOT, "scripts/write_synthetic_gguf.py"), path, "--layers", "2", "--hidden", "64",
            "--heads", "4", "--kv-heads", "2", "--ffn", "128", "--ctx", "2048", "--type", "f32",
            "--rope-base", "10000", "--vocab-gguf", vocab_gguf, "--gguf-py", gguf_py, "--name", "tiny-llama"])
    check(r.returncode == 0, "a tiny synthetic llama GGUF is written" + ("" if r.returncode == 0 else ": " + r.stderr[-800:]))
    return r.returncode == 0
