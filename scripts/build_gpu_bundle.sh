#!/usr/bin/env bash
# Builds the CUDA test and benchmark binaries HERE (a machine with nvcc but maybe no GPU) and packs
# them, with the non-system shared libraries they load, into gpu_bundle/ at the repo root, for a
# GPU host that has a CUDA 13 driver and toolkit but none of this distribution's -dev packages.
# Then run scripts/gpu_check.sh there (gpu_bundle/ is git-ignored: carry it along).
#
#   scripts/build_gpu_bundle.sh            # sm_90 (H100/H200); CUDA_ARCHS="80;90" for A100 too
#   BUILD_DIR=build-gpu JOBS=2 CUDA_ARCHS=90 scripts/build_gpu_bundle.sh
#
# The binaries link libstdc++, libgcc, GoogleTest and cudart statically and load cuBLASLt with
# dlopen, so normally only glibc remains dynamic; anything else ldd reports outside glibc is
# copied to gpu_bundle/lib. Checks here: every library resolves with LD_LIBRARY_PATH=gpu_bundle/lib,
# and test_cuda starts and skips cleanly without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-2}
CUDA_ARCHS=${CUDA_ARCHS:-90}
BUNDLE=gpu_bundle

cmake -S . -B "$BUILD_DIR" -G Ninja -DLAZYATTN_CUDA=ON -DLAZYATTN_TEST_DIRS=kernels \
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS"
cmake --build "$BUILD_DIR" --target test_cuda bench_cuda_attention -j "$JOBS"

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/bin" "$BUNDLE/lib"
cp "$BUILD_DIR/tests/cuda/test_cuda" "$BUILD_DIR/bench/cuda/bench_cuda_attention" "$BUNDLE/bin/"
strip --strip-debug "$BUNDLE/bin/"*

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
cat "$BUNDLE/MANIFEST.txt"
du -sh "$BUNDLE"
