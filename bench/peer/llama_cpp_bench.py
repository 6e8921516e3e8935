#!/usr/bin/env python3
"""llama.cpp (via the PyPI package llama-cpp-python) as the external peer of lazyattn's benchmark.

    python3 bench/peer/llama_cpp_bench.py --model models/SmolLM2-135M-Instruct.Q4_1.gguf \
        --threads 2 --prompt-tokens 512 --gen-tokens 128 --reps 1 --json

Per repetition, on a fresh (cleared) KV cache:
  prefill: one llama_decode of exactly --prompt-tokens tokens (n_batch >= N so it is one batch;
           n_ubatch 512, so llama.cpp splits it internally into ubatches of 512 like llama-bench),
  decode:  --gen-tokens greedy steps: argmax of the last logits, then llama_decode of that single
           token (EOS is ignored so every run decodes the same number of tokens).
Both phases are timed with time.perf_counter around the llama_decode calls (the low-level C API,
not Llama.eval/generate, to keep Python overhead out of the numbers). The prompt is a fixed English
text tokenized, repeated and cut at N tokens, so it is identical across runs and engines.

--rag: the prompt is a ChatML RAG prompt (documents + question, N tokens in all); additionally
times re-prefilling only a second question after dropping the first question's KV entries
(prefix reuse of the documents), reported as rag_suffix_tokens / rag_suffix_prefill_ms.

Output: one line per repetition; with --json each is a JSON object
  {"engine": "llama.cpp", "prefill_tok_s": ..., "decode_tok_s": ..., "prompt_tokens": N,
   "gen_tokens": M, ...}
and with --reps > 1 a last line with "rep": "median" holding the medians.
A warm-up run (--warmup, default 1) comes first and is not reported.
Run it on an otherwise idle machine: llama.cpp's OpenMP threads busy-wait, and with other
processes competing for the same cores decode throughput collapses (seen: 90 -> 3 tok/s on 2
vCPUs while a compiler ran); each row records the 1-minute load average before/after.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")

BASE_TEXT = (
    "The history of computing is a story of abstraction layered upon abstraction. Early machines "
    "were programmed by physically rewiring circuits; later, stored-program computers let engineers "
    "write instructions as numbers in memory. Assemblers turned those numbers into mnemonics, and "
    "compilers turned whole expressions into sequences of instructions. Each layer hid details "
    "that had once demanded careful attention, and each new generation of programmers took the "
    "previous generation's hard-won tricks for granted. Today a single line of Python may trigger "
    "millions of machine operations, executed out of order, speculatively, across several cores, "
    "with caches predicting what will be needed next. Yet the fundamentals remain: data must move, "
    "arithmetic must be performed, and the cost of moving data usually dominates the cost of "
    "computing on it. Engineers who remember this write faster software, whether they work on "
    "databases, games, or the inference engines that run language models on laptops and phones. "
    "Rivers carve valleys over millions of years, and mountains rise as continents collide; the "
    "slow processes of geology shape the landscapes where cities are later built. Farmers learned "
    "to read the seasons, sailors learned to read the stars, and merchants learned to read ledgers "
    "full of numbers that described distant harbours and the ships travelling between them. "
)

RAG_DOCS = [
    "Document {i}: The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. "
    "It was designed by the company of Gustave Eiffel for the 1889 World's Fair and is 330 metres "
    "tall. It was the tallest man-made structure in the world until 1930.",
    "Document {i}: The Statue of Liberty stands on Liberty Island in New York Harbor. The copper "
    "statue was a gift from the people of France, designed by Frederic Auguste Bartholdi, with a "
    "metal framework built by Gustave Eiffel. It was dedicated on October 28, 1886.",
    "Document {i}: The Brooklyn Bridge, completed in 1883, connects Manhattan and Brooklyn. It was "
    "designed by John A. Roebling and finished under the supervision of his son Washington and "
    "Washington's wife Emily Warren Roebling after John died of tetanus.",
]
RAG_QUESTIONS = [
    "Which engineer worked on both the Eiffel Tower and the Statue of Liberty?",
    "Who supervised the completion of the Brooklyn Bridge?",
]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def tokenize(llm, text, special=False):
    return llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)


def plain_prompt(llm, n):
    base = tokenize(llm, BASE_TEXT)
    ids = []
    while len(ids) < n:
        ids += base
    return ids[:n]


def rag_prompt(llm, n):
    """ChatML prompt: system + documents (repeated/cut to fit) + question; exactly n tokens.
    Returns (ids, prefix_len, second_question_ids)."""
    head = tokenize(llm, "<|im_start|>system\nAnswer the question using only the documents."
                         "<|im_end|>\n<|im_start|>user\n", special=True)
    tails = [tokenize(llm, f"\nQuestion: {q}<|im_end|>\n<|im_start|>assistant\n", special=True)
             for q in RAG_QUESTIONS]
    budget = n - len(head) - len(tails[0])
    if budget < 16:
        raise SystemExit(f"--prompt-tokens {n} too small for --rag")
    docs, i = [], 1
    while len(docs) < budget:
        docs += tokenize(llm, RAG_DOCS[(i - 1) % len(RAG_DOCS)].format(i=i) + "\n\n")
        i += 1
    prefix = head + docs[:budget]
    return prefix + tails[0], len(prefix), tails[1]


class Runner:
    def __init__(self, args):
        import llama_cpp
        from llama_cpp import Llama
        self.lc = llama_cpp
        n_ctx = args.prompt_tokens + args.gen_tokens + 64
        n_ctx = (n_ctx + 255) // 256 * 256
        self.llm = Llama(model_path=args.model, n_ctx=n_ctx,
                         n_batch=max(args.prompt_tokens, args.ubatch), n_ubatch=args.ubatch,
                         n_threads=args.threads, n_threads_batch=args.threads,
                         flash_attn=args.flash_attn, logits_all=False, seed=0,
                         verbose=args.verbose)
        self.ctx = self.llm._ctx.ctx
        self.mem = llama_cpp.llama_get_memory(self.ctx)
        self.n_vocab = self.llm.n_vocab()

    def clear(self):
        self.lc.llama_memory_clear(self.mem, True)

    def decode(self, ids):
        arr = (self.lc.llama_token * len(ids))(*ids)
        rc = self.lc.llama_decode(self.ctx, self.lc.llama_batch_get_one(arr, len(ids)))
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")

    def argmax_last(self):
        ptr = self.lc.llama_get_logits_ith(self.ctx, -1)
        return int(np.argmax(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))))

    def run(self, prompt, n_gen):
        self.clear()
        t0 = time.perf_counter()
        self.decode(prompt)
        self.lc.llama_synchronize(self.ctx)
        t1 = time.perf_counter()
        tok = self.argmax_last()
        out = []
        t2 = time.perf_counter()
        for _ in range(n_gen):
            self.decode([tok])
            out.append(tok)
            tok = self.argmax_last()
        t3 = time.perf_counter()
        return t1 - t0, t3 - t2, out

    def rag_suffix(self, prefix_len, suffix):
        # drop everything after the shared document prefix, then prefill only the new question
        self.lc.llama_memory_seq_rm(self.mem, 0, prefix_len, -1)
        t0 = time.perf_counter()
        self.decode(suffix)
        self.lc.llama_synchronize(self.ctx)
        return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--gen-tokens", type=int, default=128)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=1, help="unreported warm-up runs (default 1)")
    ap.add_argument("--ubatch", type=int, default=512, help="n_ubatch (default 512)")
    ap.add_argument("--flash-attn", action="store_true", help="enable llama.cpp flash attention")
    ap.add_argument("--rag", action="store_true", help="RAG-style ChatML prompt + prefix reuse")
    ap.add_argument("--json", action="store_true", help="JSON lines on stdout")
    ap.add_argument("--verbose", action="store_true", help="llama.cpp logging on stderr")
    args = ap.parse_args()
    if args.prompt_tokens < 1 or args.gen_tokens < 0 or args.reps < 1:
        ap.error("need --prompt-tokens >= 1, --gen-tokens >= 0, --reps >= 1")

    try:
        import llama_cpp
    except ImportError:
        raise SystemExit("llama_cpp not importable: run scripts/install_llama_cpp.sh")
    r = Runner(args)
    if args.rag:
        prompt, prefix_len, suffix = rag_prompt(r.llm, args.prompt_tokens)
    else:
        prompt, prefix_len, suffix = plain_prompt(r.llm, args.prompt_tokens), None, None
    assert len(prompt) == args.prompt_tokens

    for _ in range(args.warmup):
        r.run(prompt, min(args.gen_tokens, 8))

    rows = []
    for rep in range(args.reps):
        load0 = os.getloadavg()[0]
        t_pre, t_dec, _ = r.run(prompt, args.gen_tokens)
        row = {"engine": "llama.cpp",
               "prefill_tok_s": round(args.prompt_tokens / t_pre, 2),
               "decode_tok_s": round(args.gen_tokens / t_dec, 2) if args.gen_tokens else None,
               "prompt_tokens": args.prompt_tokens, "gen_tokens": args.gen_tokens,
               "prefill_ms": round(t_pre * 1e3, 3), "decode_ms": round(t_dec * 1e3, 3),
               "threads": args.threads, "n_ubatch": args.ubatch, "flash_attn": args.flash_attn,
               "mode": "rag" if args.rag else "plain", "rep": rep,
               # 1-min load average before/after: other busy processes make llama.cpp's spinning
               # OpenMP threads collapse (decode drops >10x), so discard runs with load >> 0
               "loadavg": [round(load0, 2), round(os.getloadavg()[0], 2)],
               "version": llama_cpp.__version__, "model": os.path.basename(args.model)}
        if args.rag:
            t_suf = r.rag_suffix(prefix_len, suffix)
            row.update({"rag_prefix_tokens": prefix_len, "rag_suffix_tokens": len(suffix),
                        "rag_suffix_prefill_ms": round(t_suf * 1e3, 3)})
        rows.append(row)
        emit(row, args.json)

    if args.reps > 1:
        med = dict(rows[0])
        for k in ("prefill_tok_s", "decode_tok_s", "prefill_ms", "decode_ms",
                  "rag_suffix_prefill_ms"):
            vals = [x[k] for x in rows if x.get(k) is not None]
            if vals:
                med[k] = round(statistics.median(vals), 3)
        med["loadavg"] = [max(x["loadavg"][0] for x in rows), max(x["loadavg"][1] for x in rows)]
        med["rep"] = "median"
        emit(med, args.json)
    return 0


def emit(row, as_json):
    if as_json:
        print(json.dumps(row), flush=True)
    else:
        s = (f"llama.cpp [{row['mode']}, rep {row['rep']}, {row['threads']} threads]: prefill "
             f"{row['prompt_tokens']} tok {row['prefill_ms']:.1f} ms = {row['prefill_tok_s']:.1f} "
             f"tok/s")
        if row["decode_tok_s"] is not None:
            s += (f"; decode {row['gen_tokens']} tok {row['decode_ms']:.1f} ms = "
                  f"{row['decode_tok_s']:.1f} tok/s")
        if "rag_suffix_prefill_ms" in row:
            s += (f"; rag suffix {row['rag_suffix_tokens']} tok after {row['rag_prefix_tokens']} "
                  f"cached: {row['rag_suffix_prefill_ms']:.1f} ms")
        print(s, flush=True)


if __name__ == "__main__":
    sys.exit(main())
