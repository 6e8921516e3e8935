#!/usr/bin/env bash
# Runs on the GPU host, from the repo root, the binaries packed by scripts/build_gpu_bundle.sh:
# the CUDA tests (GoogleTest), then the attention benchmark. Logs, the tests' XML report and the
# benchmark's JSON lines go to $OUT when it is set, else to gpu_check_out/. Bounded by `timeout`
# to finish within 8 minutes (tests 240 s, benchmark 210 s). Exit status: the tests', else the
# benchmark's.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

out_dir=${OUT:-gpu_check_out}
mkdir -p "$out_dir"
bundle=$PWD/gpu_bundle
chmod +x "$bundle"/bin/* "$bundle"/run.sh 2>/dev/null  # in case the copy dropped the modes
if [[ ! -x $bundle/bin/test_cuda || ! -x $bundle/bin/bench_cuda_attention ]]; then
    echo "gpu_check: $bundle/bin is incomplete: run scripts/build_gpu_bundle.sh where nvcc is, and carry gpu_bundle/" >&2
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
    ldd "$bundle/bin/test_cuda"
} 2>&1 | tee "$log"

# A GPU run that finds no device must fail, not skip (tests/cuda/cuda_test_util.h).
export LAZYATTN_REQUIRE_GPU=1
echo "== test_cuda" | tee -a "$log"
start=$(date +%s)
timeout -k 10 240 "$bundle/bin/test_cuda" --gtest_output="xml:$out_dir/test_cuda.xml" 2>&1 |
    tee "$out_dir/test_cuda.log" | grep -E '^\[ *(FAILED|PASSED|SKIPPED|==========)|LAZYATTN_TEST_SEED|outside|Failure' |
    tee -a "$log"
test_rc=${PIPESTATUS[0]}
echo "test_cuda: exit $test_rc after $(( $(date +%s) - start )) s" | tee -a "$log"

echo "== bench_cuda_attention" | tee -a "$log"
start=$(date +%s)
timeout -k 10 210 "$bundle/bin/bench_cuda_attention" --json "$out_dir/bench_cuda_attention.jsonl" 2>&1 |
    tee "$out_dir/bench_cuda_attention.log"
bench_rc=${PIPESTATUS[0]}
echo "bench_cuda_attention: exit $bench_rc after $(( $(date +%s) - start )) s" | tee -a "$log"

(( test_rc != 0 )) && exit "$test_rc"
exit "$bench_rc"
