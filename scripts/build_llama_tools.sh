#!/usr/bin/env bash
# Builds llama.cpp's own command-line tools (llama-quantize, llama-bench, llama-server,
# llama-tokenize) from the llama.cpp vendored in llama-cpp-python's source distribution on PyPI
# (the version scripts/install_llama_cpp.sh pins), into the ignored cache .llama-tools/.
# CPU only, Release, a portable AVX-512 VNNI build with AMX off (on the Intel hosts here
# /proc/cpuinfo lists AMX but AMX instructions raise SIGILL).
#
# Idempotent: a stamp file records a finished build; a second call is a no-op.
#
#   scripts/build_llama_tools.sh            build (if needed), then print the locations
#   scripts/build_llama_tools.sh --env      print shell assignments only (no build), for
#                                           `eval "$(scripts/build_llama_tools.sh --env)"`
#   scripts/build_llama_tools.sh --check    exit 0 if built, 1 if not (no build)
#   scripts/build_llama_tools.sh --sources  download and extract the sources only (no build),
#                                           then print the assignments: enough for the
#                                           vocabulary GGUFs, tokenizer test vectors and chat
#                                           templates in llama.cpp's models/ (tests use those)
#
# Variables exported by --env (and printed after a build):
#   LLAMA_TOOLS_BIN   folder holding llama-quantize, llama-bench, llama-server, llama-tokenize
#   LLAMA_GGUF_PY     the vendored gguf-py (put it on PYTHONPATH to `import gguf`)
#   LLAMA_VOCAB_DIR   llama.cpp's models/ (vocabulary-only GGUFs, e.g. ggml-vocab-llama-bpe.gguf)
#   LLAMA_CPP_SRC     the vendored llama.cpp source tree
#
# Environment: LLAMA_TOOLS_DIR (default .llama-tools), LLAMA_TOOLS_JOBS (default 1),
# LLAMA_TOOLS_TARGETS (default the four tools; a subset builds only those),
# LLAMA_TOOLS_VERSION (default: the pin in scripts/install_llama_cpp.sh), PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

PY=${PYTHON:-python3}
PIN=$(sed -n 's/^VERSION=\([0-9.]*\).*/\1/p' scripts/install_llama_cpp.sh | head -n1)
PIN=${PIN:-0.3.36}
CACHE=${LLAMA_TOOLS_DIR:-$ROOT/.llama-tools}
case "$CACHE" in /*) ;; *) CACHE="$ROOT/$CACHE" ;; esac
# When the pin was missing from pip's index, the newest version was used instead and recorded.
VERSION=${LLAMA_TOOLS_VERSION:-$PIN}
if [ -z "${LLAMA_TOOLS_VERSION:-}" ] && [ ! -f "$CACHE/built-$PIN.stamp" ] \
   && [ -f "$CACHE/fallback-version" ]; then
  VERSION=$(cat "$CACHE/fallback-version")
fi
JOBS=${LLAMA_TOOLS_JOBS:-1}
# LLAMA_TOOLS_TARGETS: a subset to build (e.g. "llama-quantize", all the test models need).
TARGETS=(${LLAMA_TOOLS_TARGETS:-llama-quantize llama-bench llama-server llama-tokenize})

SRC_ROOT="$CACHE/llama_cpp_python-$VERSION"
LLAMA_SRC="$SRC_ROOT/vendor/llama.cpp"
BUILD="$CACHE/build-$VERSION"
BIN="$BUILD/bin"
STAMP="$CACHE/built-$VERSION.stamp"

log() { echo "[build_llama_tools] $*"; }
die() { echo "[build_llama_tools] ERROR: $*" >&2; exit 1; }

print_env() {
  echo "LLAMA_TOOLS_BIN=$BIN"
  echo "LLAMA_GGUF_PY=$LLAMA_SRC/gguf-py"
  echo "LLAMA_VOCAB_DIR=$LLAMA_SRC/models"
  echo "LLAMA_CPP_SRC=$LLAMA_SRC"
  echo "export LLAMA_TOOLS_BIN LLAMA_GGUF_PY LLAMA_VOCAB_DIR LLAMA_CPP_SRC"
}

built() {
  [ -f "$STAMP" ] || return 1
  for t in "${TARGETS[@]}"; do [ -x "$BIN/$t" ] || return 1; done
  return 0
}

case "${1:-}" in
  --env)   print_env; exit 0 ;;
  --check) built; exit $? ;;
  --sources) SOURCES_ONLY=1 ;;
  "") ;;
  -h|--help) sed -n '2,/^set -e/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument '$1' (use --env, --check or nothing)" ;;
esac

if [ -z "${SOURCES_ONLY:-}" ] && built; then
  log "llama.cpp tools (llama-cpp-python $VERSION) already built in $BIN"
  print_env
  exit 0
fi

mkdir -p "$CACHE"
# Callers running at once (ctest fixtures in parallel) wait for each other instead of downloading
# and extracting into the same folder together.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/.lock"
  flock 9
fi
# One run at a time per cache: test fixtures (tokenizer vectors, chat templates) may start this
# concurrently under `ctest -j`, and two downloads or extractions into one folder would collide.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/.lock"
  flock 9
fi

# 1. the source distribution
SDIST=$(ls "$CACHE"/llama_cpp_python-"$VERSION".tar.gz 2>/dev/null | head -n1 || true)
if [ -z "$SDIST" ]; then
  log "pip download --no-binary :all: --no-deps llama-cpp-python==$VERSION"
  if ! $PY -m pip download -q --disable-pip-version-check --no-binary :all: --no-deps \
        -d "$CACHE/dl" "llama-cpp-python==$VERSION"; then
    if [ -z "${LLAMA_TOOLS_VERSION:-}" ]; then
      # The pin is not in pip's index: fall back to the newest version there.
      newest=$($PY -m pip index versions llama-cpp-python 2>/dev/null \
               | sed -n 's/^llama-cpp-python (\([^)]*\)).*/\1/p' | head -n1)
      if [ -n "$newest" ] && [ "$newest" != "$VERSION" ]; then
        log "llama-cpp-python $VERSION is not in pip's index; using the newest, $newest"
        echo "$newest" > "$CACHE/fallback-version"
        LLAMA_TOOLS_VERSION=$newest exec "$0" "$@"
      fi
    fi
    die "could not download the llama-cpp-python $VERSION sdist from PyPI" \
        "(check the network/pip index; set LLAMA_TOOLS_VERSION to another version)"
  fi
  f=$(ls "$CACHE"/dl/llama_cpp_python-"$VERSION".tar.gz 2>/dev/null | head -n1 || true)
  [ -n "$f" ] || die "pip download finished but no llama_cpp_python-$VERSION.tar.gz in $CACHE/dl"
  mv "$f" "$CACHE/"
  rmdir "$CACHE/dl" 2>/dev/null || true
  SDIST="$CACHE/llama_cpp_python-$VERSION.tar.gz"
fi
log "sdist: $SDIST ($(du -h "$SDIST" | cut -f1))"

# 2. extract
if [ ! -f "$LLAMA_SRC/CMakeLists.txt" ]; then
  log "extracting into $SRC_ROOT"
  rm -rf "$SRC_ROOT"
  tar -xzf "$SDIST" -C "$CACHE" || die "could not extract $SDIST"
  [ -f "$LLAMA_SRC/CMakeLists.txt" ] || die "$SDIST has no vendor/llama.cpp/CMakeLists.txt"
fi

if [ -n "${SOURCES_ONLY:-}" ]; then
  print_env
  exit 0
fi
command -v cmake >/dev/null || die "cmake not found (run scripts/install_deps.sh)"
command -v c++ >/dev/null || command -v g++ >/dev/null || die "no C++ compiler found"

# 3. configure (CPU only, portable AVX-512 VNNI, AMX off)
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  log "configuring llama.cpp (CPU only, Release, AVX-512 VNNI, AMX off) in $BUILD"
  cmake -S "$LLAMA_SRC" -B "$BUILD" ${GEN[@]+"${GEN[@]}"} \
    -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=OFF \
    -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
    -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_OPENMP=ON \
    -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_SERVER=ON \
    > "$CACHE/configure.log" 2>&1 \
    || { tail -n 40 "$CACHE/configure.log" >&2; rm -f "$BUILD/CMakeCache.txt";
         die "CMake configure failed (full log: $CACHE/configure.log)"; }
fi

# 4. build only the four tools, at the lowest priority
log "building ${TARGETS[*]} with -j$JOBS at nice 19 (~20-30 min on a busy 2-core machine);" \
    "log: $CACHE/build.log"
start=$(date +%s)
if ! nice -n 19 cmake --build "$BUILD" --config Release -j "$JOBS" --target "${TARGETS[@]}" \
      > "$CACHE/build.log" 2>&1; then
  grep -E "error|Error" "$CACHE/build.log" | head -n 20 >&2 || true
  tail -n 20 "$CACHE/build.log" >&2
  die "build failed (full log: $CACHE/build.log)"
fi
secs=$(( $(date +%s) - start ))

# 5. verify
for t in "${TARGETS[@]}"; do
  [ -x "$BIN/$t" ] || die "built, but $BIN/$t is missing"
done
if [ -x "$BIN/llama-bench" ]; then
  "$BIN/llama-bench" --help >/dev/null 2>&1 || die "$BIN/llama-bench --help failed"
fi
if [ -x "$BIN/llama-quantize" ]; then
  "$BIN/llama-quantize" --help >/dev/null 2>&1 || [ $? -eq 1 ] || die "$BIN/llama-quantize does not run"
fi
echo "llama-cpp-python $VERSION, built $(date -u +%FT%TZ) in ${secs}s" > "$STAMP"
log "ok: built in ${secs}s"
print_env
