#!/usr/bin/env python3
"""Writes a random-weight llama GGUF at a real model's shape, for speed tests.

Unlike src/loader/synthetic_model.h (which builds the whole file in memory with its own small
vocabulary, the right tool for unit tests), this streams one tensor at a time, so an 8B-shape
F16 file (16 GB) needs only a few MB of memory, and it copies a real tokenizer from a
vocabulary-only GGUF (llama.cpp's models/ggml-vocab-*.gguf: for the Llama-3 shapes,
ggml-vocab-llama-bpe.gguf, 128256 tokens), so the file tokenizes like the real model. It uses
llama.cpp's gguf-py (vendored in llama-cpp-python's sdist; scripts/build_llama_tools.sh fetches
it and prints LLAMA_GGUF_PY).

Matrices are F16 (or BF16/F32), N(0, sigma) with sigma = 0.5/sqrt(fan_in) clamped to
[0.02, 0.1] (0.1 for the embedding), as src/loader/synthetic_model.cpp does; RMSNorm weights
1 + N(0, 0.02) in F32. To keep an 8B file cheap to write on a busy machine, each matrix is
assembled from random slices of a 16M-value random pool (the values are still N(0, sigma);
they just repeat across tensors, which does not matter for speed). Same arguments and seed give
a byte-identical file. Quantize the result with llama-quantize.

  python3 scripts/write_synthetic_gguf.py out.gguf --preset llama-3.2-1b \\
      --vocab-gguf .llama-tools/.../models/ggml-vocab-llama-bpe.gguf
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

PRESETS = {
    # Llama-3.2-1B(-Instruct): head_dim 64, tied embeddings, llama3 rope scaling factor 32.
    "llama-3.2-1b": dict(name="synthetic-Llama-3.2-1B", layers=16, hidden=2048, heads=32,
                         kv_heads=8, head_dim=64, ffn=8192, vocab=128256, ctx=131072,
                         rope_base=500000.0, rope_factor=32.0, tied=True),
    # Llama-3.1-8B(-Instruct): head_dim 128, separate output.weight, llama3 rope scaling factor 8.
    "llama-3.1-8b": dict(name="synthetic-Llama-3.1-8B", layers=32, hidden=4096, heads=32,
                         kv_heads=8, head_dim=128, ffn=14336, vocab=128256, ctx=131072,
                         rope_base=500000.0, rope_factor=8.0, tied=False),
}

# The Llama-3 Instruct chat template (lazyattn recognises it by '<|start_header_id|>').
LLAMA3_CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
    "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{% endif %}")


def import_gguf(gguf_py: str | None):
    candidates = [gguf_py, os.environ.get("LLAMA_GGUF_PY")]
    for c in candidates:
        if c and os.path.isdir(c) and c not in sys.path:
            sys.path.insert(0, c)
    try:
        import gguf  # noqa: F401
    except ImportError:
        sys.exit("error: cannot import gguf-py; pass --gguf-py or set LLAMA_GGUF_PY "
                 "(eval \"$(scripts/build_llama_tools.sh --env)\")")
    return sys.modules["gguf"]


def llama3_rope_factors(head_dim: int, base: float, factor: float, low: float = 1.0,
                        high: float = 4.0, old_ctx: int = 8192) -> np.ndarray:
    """rope_freqs.weight as convert_hf_to_gguf.py writes it for rope_type llama3."""
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    low_wl, high_wl = old_ctx / low, old_ctx / high
    out = []
    for f in freqs:
        wl = 2 * math.pi / f
        if wl < high_wl:
            out.append(1.0)
        elif wl > low_wl:
            out.append(factor)
        else:
            smooth = (old_ctx / wl - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.asarray(out, dtype=np.float32)


def copy_tokenizer(gguf, writer, vocab_path: str) -> tuple[list[str], set[str]]:
    r = gguf.GGUFReader(vocab_path)
    copied = set()
    tokens: list[str] = []
    for key, field in r.fields.items():
        if not key.startswith("tokenizer."):
            continue
        main = field.types[0]
        if main == gguf.GGUFValueType.ARRAY:
            val = field.contents()
            writer.add_key_value(key, val, main, sub_type=field.types[-1])
            if key == "tokenizer.ggml.tokens":
                tokens = val
        else:
            writer.add_key_value(key, field.contents(), main)
        copied.add(key)
    if not tokens:
        sys.exit(f"error: {vocab_path} has no tokenizer.ggml.tokens")
    return tokens, copied


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("output")
    ap.add_argument("--preset", choices=sorted(PRESETS), help="a real model's shape")
    ap.add_argument("--name")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--kv-heads", type=int)
    ap.add_argument("--head-dim", type=int, help="default hidden / heads")
    ap.add_argument("--ffn", type=int)
    ap.add_argument("--ctx", type=int)
    ap.add_argument("--rope-base", type=float)
    ap.add_argument("--rope-factor", type=float,
                    help="llama3 rope scaling factor (writes rope_freqs.weight); 0 = none")
    ap.add_argument("--tied", dest="tied", action="store_true", default=None)
    ap.add_argument("--untied", dest="tied", action="store_false")
    ap.add_argument("--type", choices=["f16", "bf16", "f32"], default="f16")
    ap.add_argument("--vocab-gguf", required=True,
                    help="vocabulary-only GGUF whose tokenizer.* keys are copied")
    ap.add_argument("--gguf-py", help="path of llama.cpp's gguf-py")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    cfg = dict(PRESETS[args.preset]) if args.preset else dict(
        name="synthetic-llama", layers=2, hidden=256, heads=4, kv_heads=2, head_dim=None,
        ffn=512, vocab=None, ctx=4096, rope_base=10000.0, rope_factor=0.0, tied=True)
    for k in ("name", "layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "ctx",
              "rope_base", "rope_factor", "tied"):
        v = getattr(args, k)
        if v is not None:
            cfg[k] = v
    if not cfg.get("head_dim"):
        if cfg["hidden"] % cfg["heads"]:
            sys.exit("error: hidden is not a multiple of heads; pass --head-dim")
        cfg["head_dim"] = cfg["hidden"] // cfg["heads"]
    if cfg["heads"] % cfg["kv_heads"]:
        sys.exit("error: heads must be a multiple of kv heads")

    gguf = import_gguf(args.gguf_py)
    arch = "llama"
    tmp = args.output + ".tmp"
    w = gguf.GGUFWriter(tmp, arch)
    w.add_name(cfg["name"])
    tokens, copied = copy_tokenizer(gguf, w, args.vocab_gguf)
    n_vocab = len(tokens)
    if cfg.get("vocab") and cfg["vocab"] != n_vocab:
        sys.exit(f"error: {args.vocab_gguf} has {n_vocab} tokens, the shape wants {cfg['vocab']}")
    if "tokenizer.chat_template" not in copied and "<|start_header_id|>" in tokens:
        w.add_chat_template(LLAMA3_CHAT_TEMPLATE)

    L, H, D = cfg["layers"], cfg["hidden"], cfg["head_dim"]
    nh, nkv, F = cfg["heads"], cfg["kv_heads"], cfg["ffn"]
    ftype = {"f16": 1, "bf16": 32, "f32": 0}[args.type]
    w.add_uint32(f"{arch}.block_count", L)
    w.add_uint32(f"{arch}.context_length", cfg["ctx"])
    w.add_uint32(f"{arch}.embedding_length", H)
    w.add_uint32(f"{arch}.feed_forward_length", F)
    w.add_uint32(f"{arch}.attention.head_count", nh)
    w.add_uint32(f"{arch}.attention.head_count_kv", nkv)
    if D * nh != H:
        w.add_uint32(f"{arch}.attention.key_length", D)
        w.add_uint32(f"{arch}.attention.value_length", D)
    w.add_float32(f"{arch}.rope.freq_base", cfg["rope_base"])
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)
    w.add_uint32(f"{arch}.rope.dimension_count", D)
    w.add_uint32(f"{arch}.vocab_size", n_vocab)
    w.add_file_type(ftype)
    w.add_quantization_version(2)

    # (name, numpy shape (rows=out, cols=in), kind, sigma)
    mats: list[tuple[str, tuple[int, ...], str, float]] = []

    def sig(fan_in: int) -> float:
        return min(max(0.5 / math.sqrt(fan_in), 0.02), 0.1)

    mats.append(("token_embd.weight", (n_vocab, H), "mat", 0.1))
    if cfg["rope_factor"]:
        mats.append(("rope_freqs.weight", (D // 2,), "rope", 0.0))
    mats.append(("output_norm.weight", (H,), "norm", 0.02))
    if not cfg["tied"]:
        mats.append(("output.weight", (n_vocab, H), "mat", sig(H)))
    for i in range(L):
        p = f"blk.{i}."
        mats += [(p + "attn_norm.weight", (H,), "norm", 0.02),
                 (p + "attn_q.weight", (nh * D, H), "mat", sig(H)),
                 (p + "attn_k.weight", (nkv * D, H), "mat", sig(H)),
                 (p + "attn_v.weight", (nkv * D, H), "mat", sig(H)),
                 (p + "attn_output.weight", (H, nh * D), "mat", sig(nh * D)),
                 (p + "ffn_norm.weight", (H,), "norm", 0.02),
                 (p + "ffn_gate.weight", (F, H), "mat", sig(H)),
                 (p + "ffn_up.weight", (F, H), "mat", sig(H)),
                 (p + "ffn_down.weight", (H, F), "mat", sig(F))]

    mat_dtype = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32}[args.type]
    mat_raw = {"f16": None, "bf16": gguf.GGMLQuantizationType.BF16, "f32": None}[args.type]
    itemsize = np.dtype(mat_dtype).itemsize
    total = 0
    for name, shape, kind, _ in mats:
        n = int(np.prod(shape))
        if kind == "mat":
            if mat_raw is None:
                w.add_tensor_info(name, shape, np.dtype(mat_dtype), n * itemsize)
            else:
                w.add_tensor_info(name, shape, np.dtype(np.float32), n * itemsize,
                                  raw_dtype=mat_raw)
            total += n * itemsize
        else:
            w.add_tensor_info(name, shape, np.dtype(np.float32), n * 4)
            total += n * 4

    # a random pool per sigma, in the output type
    rng = np.random.default_rng(args.seed)
    pool_n = 1 << 24
    pools: dict[float, np.ndarray] = {}

    def pool(s: float) -> np.ndarray:
        if s not in pools:
            v = rng.standard_normal(pool_n, dtype=np.float32) * np.float32(s)
            if args.type == "f16":
                pools[s] = v.astype(np.float16)
            elif args.type == "bf16":
                pools[s] = (v.view(np.uint32) >> 16).astype(np.uint16)
            else:
                pools[s] = v
        return pools[s]

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    fout = w.fout[0]
    t0 = time.time()
    done = 0
    chunk = 1 << 22
    for idx, (name, shape, kind, s) in enumerate(mats):
        n = int(np.prod(shape))
        w.write_padding(fout, fout.tell())
        if kind == "mat":
            p = pool(s)
            left = n
            while left:
                m = min(chunk, left)
                off = int(rng.integers(0, pool_n - m + 1))
                p[off:off + m].tofile(fout)
                left -= m
            nbytes = n * itemsize
        elif kind == "norm":
            v = (1.0 + s * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)
            v.tofile(fout)
            nbytes = n * 4
        else:
            v = llama3_rope_factors(D, cfg["rope_base"], cfg["rope_factor"])
            assert v.size == n
            v.tofile(fout)
            nbytes = n * 4
        w.write_padding(fout, nbytes)
        done += nbytes
        if idx % 20 == 0 or idx == len(mats) - 1:
            el = time.time() - t0
            print(f"\r[write_synthetic_gguf] {done / 2**30:6.2f} / {total / 2**30:.2f} GiB "
                  f"({el:4.0f}s)", end="", flush=True)
    print()
    w.close()
    os.replace(tmp, args.output)
    n_params = sum(int(np.prod(s)) for _, s, _, _ in mats)
    print(f"[write_synthetic_gguf] wrote {args.output}: {cfg['name']}, {n_params / 1e9:.2f}B "
          f"params, {L} layers, hidden {H}, heads {nh}/{nkv} x {D}, ffn {F}, vocab {n_vocab}, "
          f"{args.type}, {os.path.getsize(args.output) / 2**30:.2f} GiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
