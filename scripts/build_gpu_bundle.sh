#!/usr/bin/env bash
# Builds the CUDA test and benchmark binaries and lazyattn itself HERE (a machine with nvcc but
# maybe no GPU) and packs them, with the non-system shared libraries they load and SmolLM2's
# vocabulary (the tokenizer of synthetic models), into gpu_bundle/ at the repo root, and the same
# compressed into gpu_bundle.tar.gz, for a GPU host that has a CUDA 13 driver and toolkit but none
# of this distribution's -dev packages. Then run scripts/gpu_check.sh there (both are
# git-ignored: carry one along; the tarball fits the device tool's 64 MiB).
#
#   scripts/build_gpu_bundle.sh            # sm_90 (H100/H200); CUDA_ARCHS="80;90" for A100 too
#   BUILD_DIR=build-gpu JOBS=2 CUDA_ARCHS=90 scripts/build_gpu_bundle.sh
#
# test_cuda and bench_cuda_attention link libstdc++, libgcc, GoogleTest and cudart statically and
# load cuBLASLt with dlopen, so only glibc remains dynamic; lazyattn and the engine tests also load
# Debian's libraries (OpenBLAS, spdlog, fmt, PCRE2, xxHash, hiredis, libstdc++): anything ldd
# reports outside glibc and the NVIDIA driver and toolkit is copied to gpu_bundle/lib. Checks here: every library resolves with LD_LIBRARY_PATH=gpu_bundle/lib,
# and test_cuda starts and skips cleanly without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-2}
CUDA_ARCHS=${CUDA_ARCHS:-90}
BUNDLE=gpu_bundle

cmake -S . -B "$BUILD_DIR" -G Ninja -DLAZYATTN_CUDA=ON -DLAZYATTN_TEST_DIRS=kernels \
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS"
cmake --build "$BUILD_DIR" --target test_cuda test_cuda_engine test_scheduler_cuda bench_cuda_attention lazyattn \
    la_extract_vocabulary -j "$JOBS"

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib"
cp "$BUILD_DIR/tests/cuda/test_cuda" "$BUILD_DIR/tests/cuda/test_cuda_engine" "$BUILD_DIR/tests/cuda/test_scheduler_cuda" \
    "$BUILD_DIR/bench/cuda/bench_cuda_attention" "$BUILD_DIR/lazyattn" "$BUNDLE/bin/"
strip --strip-debug "$BUNDLE/bin/"*
model=${LAZYATTN_MODEL:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
[[ -f $model ]] || ./scripts/install_deps.sh  # installs the embedded model
"$BUILD_DIR/tools/la_extract_vocabulary" "$model" "$BUNDLE/vocab.gguf"

# glibc and the loader come from the host; the NVIDIA driver (libcuda) and toolkit (cuBLAS) too.
system_lib='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libresolv|libutil|libcuda|libnvidia|libcublas|libcublasLt|libcudart)\.'
missing=0
for bin in "$BUNDLE"/bin/*; do
    while read -r name arrow path _; do
        [[ "$arrow" == "=>" ]] || continue
        if [[ "$path" == "not" ]]; then
            echo "build_gpu_bundle: $bin needs $name, which is not found here" >&2
            missing=1
            continue
        fi
        [[ "$name" =~ $system_lib ]] && continue
        [[ -e "$BUNDLE/lib/$name" ]] || cp -L "$path" "$BUNDLE/lib/$name"
    done < <(ldd "$bin")
done
[[ $missing == 0 ]] || exit 1

cat > "$BUNDLE/run.sh" <<'EOF'
#!/usr/bin/env bash
# Runs a bundled binary with the bundle's libraries first: gpu_bundle/run.sh test_cuda [args]
here="$(cd "$(dirname "$0")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$here/bin/$1" "${@:2}"
EOF
chmod +x "$BUNDLE/run.sh"

glibc_needed=$(objdump -T "$BUNDLE"/bin/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -u -V | tail -1)
{
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (+ local changes)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m), $(ldd --version | head -1)"
    echo "nvcc: $(nvcc --version 2>/dev/null | tail -1 || /usr/local/cuda/bin/nvcc --version | tail -1)"
    echo "CUDA architectures: $CUDA_ARCHS"
    echo "newest glibc symbol needed: $glibc_needed"
    echo "bundled libraries: $(find "$BUNDLE/lib" -type f -printf '%f ')"
    echo "vocab.gguf: the vocabulary of $(basename "$model") (tokenizer of synthetic:NAME models)"
    echo "from the host: glibc, the NVIDIA driver (libcuda.so.1, CUDA 13 capable), libcublasLt.so.13"
} > "$BUNDLE/MANIFEST.txt"

# Checks on this machine.
for bin in "$BUNDLE"/bin/*; do
    if LD_LIBRARY_PATH="$BUNDLE/lib" ldd "$bin" | grep -q 'not found'; then
        echo "build_gpu_bundle: unresolved libraries in $bin:" >&2
        LD_LIBRARY_PATH="$BUNDLE/lib" ldd "$bin" >&2
        exit 1
    fi
done
"$BUNDLE/run.sh" test_cuda --gtest_brief=1 > "$BUILD_DIR/bundle_smoke.log" 2>&1 || {
    echo "build_gpu_bundle: test_cuda failed to run here:" >&2
    tail -20 "$BUILD_DIR/bundle_smoke.log" >&2
    exit 1
}
echo "test_cuda here: $(grep -E '^\[  (PASSED|SKIPPED|FAILED)' "$BUILD_DIR/bundle_smoke.log" | tr '\n' ' ')"
# lazyattn from the bundle on a synthetic model with the bundled vocabulary (CPU: no device here).
LAZYATTN_MODEL="$BUNDLE/vocab.gguf" "$BUNDLE/run.sh" lazyattn generate --model synthetic:tiny --prompt hello \
    --max-tokens 2 --threads 1 > "$BUILD_DIR/bundle_lazyattn.log" 2>&1 || {
    echo "build_gpu_bundle: the bundled lazyattn failed to run here:" >&2
    tail -20 "$BUILD_DIR/bundle_lazyattn.log" >&2
    exit 1
}
tar -czf gpu_bundle.tar.gz "$BUNDLE"
cat "$BUNDLE/MANIFEST.txt"
du -sh "$BUNDLE" gpu_bundle.tar.gz
