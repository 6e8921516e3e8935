#!/usr/bin/env bash
# Fuzzes the GGUF reader (GgufFile::parse -> ModelConfig -> dequantization) with libFuzzer,
# ASan and UBSan.
#   scripts/run_fuzz.sh [seconds=600] [extra libFuzzer flags...]
# Builds build-fuzz with clang, writes a seed corpus (tiny synthetic models and small valid files)
# to build-fuzz/fuzz/seeds, keeps discovered inputs in build-fuzz/fuzz/corpus and crashes in
# build-fuzz/fuzz/artifacts. One worker; run it under `nice` on a shared machine. Exit status is
# libFuzzer's: 0 when no crash was found.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-600}
[ $# -gt 0 ] && shift
BUILD=${LAZYATTN_FUZZ_BUILD:-build-fuzz}
JOBS=${JOBS:-2}

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DLAZYATTN_FUZZ=ON -DLAZYATTN_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$BUILD" --target fuzz_gguf_reader fuzz_gguf_seeds -j"$JOBS"

FUZZ_DIR=$BUILD/fuzz
mkdir -p "$FUZZ_DIR/seeds" "$FUZZ_DIR/corpus" "$FUZZ_DIR/artifacts"
"$FUZZ_DIR/fuzz_gguf_seeds" "$FUZZ_DIR/seeds"

# The first corpus directory receives new interesting inputs; the seeds are read only.
exec "$FUZZ_DIR/fuzz_gguf_reader" \
  -max_total_time="$DURATION" \
  -dict=fuzz/gguf.dict \
  -artifact_prefix="$FUZZ_DIR/artifacts/" \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  "$@" "$FUZZ_DIR/corpus" "$FUZZ_DIR/seeds"
