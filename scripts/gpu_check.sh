#!/usr/bin/env bash
# Runs on the GPU host, from the repo root, what scripts/build_gpu_bundle.sh packed into
# gpu_bundle/ (no Debian -dev packages, no network needed there), in under 8 minutes:
#   1. test_cuda: the kernel tests (GoogleTest)                                   <= 100 s
#   2. test_cuda_engine, test_scheduler_cuda: the engine end to end on the GPU    <= 100 s
#      (CUDA vs CPU engine, lazy == lazy-k == block-attn, the scheduler tests)
#   3. bench_cuda_attention: lazy decode vs delta = 0 vs lazy-k, GB/s against the <= 100 s
#      measured copy bandwidth; lazy prefill TFLOP/s
#   4. bench/cuda/sdpa_prefill.py: PyTorch SDPA (flash) at the prefill shapes    <= 40 s
#   5. lazyattn bench rag on synthetic:llama-8b at the paper's operating point   <= 150 s
#      (100 documents of 2048 tokens, 5 per request, Zipf 2.1, a KV budget of a third of the
#      documents, warm-up excluded) for lazy, block-attn and prefix
#   6. bench/cuda/gpu_summary.py: the results against issue 14's targets (gpu_summary.md)
# Logs, the tests' XML reports and the benchmarks' JSON go to $OUT when it is set, else to
# gpu_check_out/. Exit status: the first failing step's. GPU_CHECK_STEPS="1 2" runs a subset.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

out_dir=${OUT:-gpu_check_out}
mkdir -p "$out_dir"
bundle=$PWD/gpu_bundle
if [[ -f gpu_bundle.tar.gz && ! -d $bundle ]]; then  # carried compressed (the device tool's 64 MiB)
    tar -xzf gpu_bundle.tar.gz || exit 2
fi
chmod +x "$bundle"/bin/* "$bundle"/run.sh 2>/dev/null
for bin in test_cuda test_cuda_engine test_scheduler_cuda bench_cuda_attention lazyattn; do
    [[ -x $bundle/bin/$bin ]] || missing_bin=$bin
done
if [[ -n ${missing_bin:-} ]]; then
    echo "gpu_check: $bundle/bin lacks $missing_bin: run scripts/build_gpu_bundle.sh where nvcc is, and carry gpu_bundle/" >&2
    exit 2
fi

# Library path: the bundle first, then the host's CUDA toolkit (for cuBLASLt, loaded by dlopen).
libs=$bundle/lib
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [[ -d $d ]] && libs=$libs:$d
done
cublaslt=$(find /usr/local/cuda/lib64/ /usr/local/cuda/targets/x86_64-linux/lib/ -maxdepth 1 -name 'libcublasLt.so.13*' 2>/dev/null | head -1)
if [[ -z $cublaslt ]]; then  # e.g. only the pip wheels (nvidia-cublas) that PyTorch uses
    cublaslt=$(timeout 30 find / -xdev -name 'libcublasLt.so.13*' -not -path '*/proc/*' 2>/dev/null | head -1)
    [[ -n $cublaslt ]] && libs=$libs:$(dirname "$cublaslt")
fi
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

log=$out_dir/gpu_check.log
{
    echo "== gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    cat "$bundle/MANIFEST.txt" 2>/dev/null
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv 2>&1 ||
        echo "nvidia-smi failed"
    echo "libcublasLt: ${cublaslt:-NOT FOUND (the GEMM test will fail; everything else runs)}"
    echo "glibc here: $(ldd --version 2>/dev/null | head -1)"
    for bin in "$bundle"/bin/*; do ldd "$bin" | grep -E 'not found|=> .*gpu_bundle' | sed "s|^|$(basename "$bin"): |"; done
} 2>&1 | tee "$log"

# A GPU run that finds no device must fail, not skip (tests/cuda/require_cuda_device.h).
export LAZYATTN_REQUIRE_GPU=1
steps=${GPU_CHECK_STEPS:-1 2 3 4 5 6}
first_rc=0
# run_step NAME SECONDS COMMAND...: bounded by `timeout`, output in $out_dir/NAME.log, the exit
# status and duration in gpu_check.log; the first non-zero status is the script's.
run_step() {
    local name=$1 limit=$2
    shift 2
    echo "== $name (at most $limit s)" | tee -a "$log"
    local start rc
    start=$(date +%s)
    timeout -k 10 "$limit" "$@" > "$out_dir/$name.log" 2>&1
    rc=$?
    grep -E '^\[ *(FAILED|PASSED|SKIPPED|==========)|LAZYATTN_TEST_SEED|outside|Failure|^(decode|prefill|sdpa) |^[a-z-]+ +[0-9]|error' \
        "$out_dir/$name.log" | tail -60 | tee -a "$log"
    (( rc == 124 || rc == 137 )) && echo "$name: TIMED OUT after $limit s" | tee -a "$log"
    echo "$name: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$log"
    (( rc != 0 && first_rc == 0 )) && first_rc=$rc
    return 0
}
has_step() { [[ " $steps " == *" $1 "* ]]; }

has_step 1 && run_step test_cuda 100 "$bundle/bin/test_cuda" --gtest_output="xml:$out_dir/test_cuda.xml"
if has_step 2; then
    run_step test_cuda_engine 50 "$bundle/bin/test_cuda_engine" --gtest_output="xml:$out_dir/test_cuda_engine.xml"
    run_step test_scheduler_cuda 50 "$bundle/bin/test_scheduler_cuda" \
        --gtest_output="xml:$out_dir/test_scheduler_cuda.xml"
fi
has_step 3 && run_step bench_cuda_attention 100 "$bundle/bin/bench_cuda_attention" \
    --json "$out_dir/bench_cuda_attention.jsonl"
has_step 4 && run_step sdpa_prefill 40 python3 bench/cuda/sdpa_prefill.py --json "$out_dir/sdpa_prefill.jsonl"
if has_step 5; then
    # The synthetic model's tokenizer is SmolLM2's vocabulary, carried as a vocabulary-only GGUF.
    threads=$(nproc)
    LAZYATTN_MODEL=$bundle/vocab.gguf run_step rag_8b 150 "$bundle/bin/lazyattn" bench rag --device cuda \
        --model synthetic:llama-8b:bf16 --threads "$threads" --docs 100 --doc-tokens 2048 --k 5 --zipf 2.1 \
        --kv-budget-docs 33.4 --tail-tokens 64 --output-tokens 32 --clients 8 --requests 96 --warmup-requests 32 \
        --modes lazy block-attn prefix --no-floor --json "$out_dir/rag_8b.json"
fi
has_step 6 && python3 bench/cuda/gpu_summary.py "$out_dir" 2>&1 | tee -a "$log"
echo "gpu_check: exit $first_rc" | tee -a "$log"
exit "$first_rc"
