#!/usr/bin/env bash
# Builds XGrammar's C++ core (the grammar engine behind constrained decoding, docs/design.md
# "Structured output") from its PyPI source distribution into the ignored cache .xgrammar/:
# a static library (-fPIC, no Python bindings, no nanobind, no LTO) and its headers (xgrammar's
# own, dlpack's and picojson's, and the two headers of its JSON-schema and regex converters, all
# inside the sdist).
#
# Idempotent: a stamp file records a finished build; a second call is a no-op. CMake runs it at
# configure time (cmake/xgrammar.cmake) so `make build` and .ci/run on a fresh clone get it with no
# manual step; when the sdist cannot be fetched or built it exits non-zero and lazyattn builds
# without it (constraint fields are then refused with a 400 saying so).
#
#   scripts/build_xgrammar.sh           build (if needed), then print the install prefix
#   scripts/build_xgrammar.sh --check   exit 0 if built, 1 if not (no build)
#   scripts/build_xgrammar.sh --prefix  print the install prefix only (no build)
#
# Environment: XGRAMMAR_DIR (default .xgrammar), XGRAMMAR_JOBS (default 2), XGRAMMAR_VERSION
# (default the pin below), PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

PIN=0.1.27
VERSION=${XGRAMMAR_VERSION:-$PIN}
PY=${PYTHON:-python3}
CACHE=${XGRAMMAR_DIR:-$ROOT/.xgrammar}
case "$CACHE" in /*) ;; *) CACHE="$ROOT/$CACHE" ;; esac
JOBS=${XGRAMMAR_JOBS:-2}
SRC="$CACHE/xgrammar-$VERSION"
BUILD="$CACHE/build-$VERSION"
PREFIX="$CACHE/install-$VERSION"
STAMP="$PREFIX/built.stamp"

log() { echo "[build_xgrammar] $*" >&2; }
die() { echo "[build_xgrammar] ERROR: $*" >&2; exit 1; }
# The headers of XGrammar's JSON-schema and regex converters (to EBNF text), which the sdist keeps
# beside its sources: lazyattn rewrites that text before compiling it
# (src/grammar/counted_repetition.h). Also copied into an install made before they were.
CONVERTERS="$PREFIX/include/xgrammar/converters"
install_converter_headers() {
  mkdir -p "$CONVERTERS"
  cp "$SRC/cpp/json_schema_converter.h" "$SRC/cpp/regex_converter.h" "$CONVERTERS/"
}

case "${1:-}" in
  --check) [ -f "$STAMP" ]; exit $? ;;
  --prefix) echo "$PREFIX"; exit 0 ;;
  "") ;;
  *) die "unknown argument '$1' (use --check, --prefix or nothing)" ;;
esac
if [ -f "$STAMP" ] && [ ! -f "$CONVERTERS/regex_converter.h" ] && [ -f "$SRC/cpp/regex_converter.h" ]; then
  install_converter_headers
fi
if [ -f "$STAMP" ] && [ -f "$CONVERTERS/regex_converter.h" ]; then echo "$PREFIX"; exit 0; fi

mkdir -p "$CACHE"
# One run at a time per cache (two configures of lazyattn at once would collide).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/.lock"
  flock 9
fi
if [ -f "$STAMP" ] && [ -f "$CONVERTERS/regex_converter.h" ]; then echo "$PREFIX"; exit 0; fi
rm -f "$STAMP"  # an install without the converters' headers (and no sources to take them from)

# 1. the source distribution (pip prepares its metadata, which fetches its build tools: ~2 min)
SDIST="$CACHE/xgrammar-$VERSION.tar.gz"
if [ ! -f "$SDIST" ]; then
  log "pip download --no-binary :all: --no-deps xgrammar==$VERSION"
  $PY -m pip download -q --disable-pip-version-check --timeout 30 --retries 2 --no-binary :all: --no-deps \
      -d "$CACHE/dl" "xgrammar==$VERSION" >&2 \
    || die "could not download the xgrammar $VERSION sdist from PyPI"
  mv "$CACHE/dl/xgrammar-$VERSION.tar.gz" "$SDIST" || die "no xgrammar-$VERSION.tar.gz in $CACHE/dl"
  rm -rf "$CACHE/dl"
fi

# 2. extract
if [ ! -f "$SRC/CMakeLists.txt" ]; then
  rm -rf "$SRC"
  tar -xzf "$SDIST" -C "$CACHE" || die "could not extract $SDIST"
  for f in CMakeLists.txt include/xgrammar/xgrammar.h 3rdparty/dlpack/include/dlpack/dlpack.h \
           3rdparty/picojson/picojson.h; do
    [ -f "$SRC/$f" ] || die "$SDIST has no $f"
  done
fi

# 3. configure and build the static library with XGrammar's own CMake: no bindings, no tests, no
# LTO (its flags ask for -flto=auto, whose slim objects a plain `ar` archive cannot carry) and no
# -Werror (a newer compiler's new warning must not fail our build).
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
FAILED="$CACHE/failed-$VERSION"
if [ -f "$FAILED" ] && [ -z "${XGRAMMAR_RETRY:-}" ]; then
  die "an earlier build failed (see $CACHE/build.log); XGRAMMAR_RETRY=1 tries again"
fi
# XGrammar's own cmake/config.cmake turns the Python bindings on; a config.cmake in the build
# folder is read instead of it.
mkdir -p "$BUILD"
cat > "$BUILD/config.cmake" <<'CFG'
set(CMAKE_BUILD_TYPE Release)
set(XGRAMMAR_BUILD_PYTHON_BINDINGS OFF)
set(XGRAMMAR_ENABLE_COVERAGE OFF)
set(XGRAMMAR_BUILD_CXX_TESTS OFF)
set(XGRAMMAR_ENABLE_CPPTRACE OFF)
set(XGRAMMAR_ENABLE_INTERNAL_CHECK OFF)
CFG
log "building XGrammar $VERSION (static, -fPIC) with -j$JOBS; log: $CACHE/build.log"
start=$(date +%s)
{
  cmake -S "$SRC" -B "$BUILD" ${GEN[@]+"${GEN[@]}"} -DCMAKE_BUILD_TYPE=Release \
    -DXGRAMMAR_BUILD_PYTHON_BINDINGS=OFF -DXGRAMMAR_BUILD_CXX_TESTS=OFF \
    -DXGRAMMAR_ENABLE_CPPTRACE=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    "-DCMAKE_CXX_FLAGS=-fno-lto -Wno-error" &&
  nice -n 10 cmake --build "$BUILD" -j "$JOBS" --target xgrammar
} > "$CACHE/build.log" 2>&1 || {
  tail -n 30 "$CACHE/build.log" >&2
  touch "$FAILED"
  die "build failed (log: $CACHE/build.log)"
}
rm -f "$FAILED"

# 4. install: the archive and the headers lazyattn compiles against
rm -rf "$PREFIX"
mkdir -p "$PREFIX/lib" "$PREFIX/include"
cp "$BUILD/libxgrammar.a" "$PREFIX/lib/"
cp -r "$SRC/include/xgrammar" "$SRC/3rdparty/dlpack/include/dlpack" "$PREFIX/include/"
cp "$SRC/3rdparty/picojson/picojson.h" "$PREFIX/include/"
cp "$SRC/LICENSE" "$PREFIX/LICENSE"
install_converter_headers
echo "xgrammar $VERSION, built $(date -u +%FT%TZ) in $(( $(date +%s) - start ))s" > "$STAMP"
log "ok: $(cat "$STAMP")"
echo "$PREFIX"
