#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention (flash backend) on the prefill shapes of
bench_cuda_attention: one causal sequence of L rows (L = 1k..8k), Llama-3.1-8B heads (32 query,
8 KV, head_dim 128) and Llama-3.2-1B heads (32 / 8 / 64), bf16. TFLOP/s counts the same
4 * head_dim * heads * L(L+1)/2 as bench_cuda_attention, so the two JSON files compare line by
line (bench/cuda/gpu_summary.py does). Timing: CUDA events around repeated calls, >= 25 ms.

Runs on the GPU host (scripts/gpu_check.sh) with the PyTorch installed there; without PyTorch or
a device it writes one JSON line saying why and exits 0, so the rest of the check still runs.
"""
import argparse
import json
import sys

SHAPES = [("8B", 32, 8, 128), ("1B", 32, 8, 64)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", required=True, help="JSON lines out")
    ap.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    args = ap.parse_args()
    out = open(args.json, "w")

    def emit(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()

    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"sdpa_prefill: PyTorch not importable ({e}); skipped")
        emit({"bench": "sdpa_prefill", "skipped": f"PyTorch not importable: {e}"})
        return 0
    if not torch.cuda.is_available():
        print("sdpa_prefill: no CUDA device visible to PyTorch; skipped")
        emit({"bench": "sdpa_prefill", "skipped": "no CUDA device visible to PyTorch"})
        return 0
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    except ImportError:  # PyTorch < 2.3: the flash kernel is the default choice for these shapes
        sdpa_kernel = None
        backends = {"default": None}

    dev = torch.device("cuda")
    print(f"sdpa_prefill: torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    for name, heads, kv_heads, d in SHAPES:
        for length in args.lengths:
            g = torch.Generator(device=dev).manual_seed(5)
            q = torch.randn(1, heads, length, d, device=dev, dtype=torch.bfloat16, generator=g)
            k = torch.randn(1, kv_heads, length, d, device=dev, dtype=torch.bfloat16, generator=g)
            v = torch.randn(1, kv_heads, length, d, device=dev, dtype=torch.bfloat16, generator=g)
            # GQA: the KV heads repeated for the query heads, outside the timed call.
            k_rep = k.repeat_interleave(heads // kv_heads, dim=1)
            v_rep = v.repeat_interleave(heads // kv_heads, dim=1)
            flops = 4.0 * d * heads * (length * (length + 1) / 2.0)
            for backend_name, backend in backends.items():
                def call():
                    return F.scaled_dot_product_attention(q, k_rep, v_rep, is_causal=True)

                try:
                    if sdpa_kernel is not None:
                        with sdpa_kernel(backend):
                            t = time_call(torch, call)
                    else:
                        t = time_call(torch, call)
                except RuntimeError as e:  # that backend does not take these shapes here
                    emit({"bench": "sdpa_prefill", "model": name, "length": length, "backend": backend_name,
                          "error": str(e).splitlines()[0]})
                    continue
                print(f"sdpa {backend_name:<7} {name:<3} L={length:<5} {t * 1e6:9.1f} us "
                      f"{flops / t * 1e-12:7.1f} TFLOP/s")
                emit({"bench": "sdpa_prefill", "model": name, "length": length, "backend": backend_name,
                      "time_us": round(t * 1e6, 2), "tflops": round(flops / t * 1e-12, 2),
                      "torch": torch.__version__})
            del q, k, v, k_rep, v_rep
    return 0


def time_call(torch, call) -> float:
    """Seconds per call: warm-up, then batches of 10 calls until 25 ms have passed."""
    for _ in range(3):
        call()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls, elapsed_ms = 0, 0.0
    start.record()
    while elapsed_ms < 25.0:
        for _ in range(10):
            call()
        calls += 10
        stop.record()
        stop.synchronize()
        elapsed_ms = start.elapsed_time(stop)
    return elapsed_ms * 1e-3 / calls


if __name__ == "__main__":
    sys.exit(main())
