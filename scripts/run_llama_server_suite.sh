#!/usr/bin/env bash
# Runs llama.cpp's own server test suite (tools/server/tests, pytest) against `lazyattn serve`,
# and fails unless every failure is one the checked-in list tests/e2e/llama_server_suite_expected.txt
# names, with its reason (model-specific, not-served:FEATURE, known-gap:ISSUE).
#
# The suite comes from the llama.cpp that the pinned llama-cpp-python sdist vendors
# (scripts/build_llama_tools.sh --sources; nothing of it is copied into git). Its Python
# requirements (its requirements.txt, pinned here to what pip resolved it to, plus pytest-timeout)
# go into the ignored virtual environment .llama-tools/server-suite-venv. llama-server is
# scripts/llama_server_wrapper.sh, which drops the suite's model downloads so the embedded
# SmolLM2-135M-Instruct serves every test; nothing else of the command line changes.
# The tests run one at a time (-m "not slow", as the suite's own tests.sh), on a free port.
#
#   scripts/run_llama_server_suite.sh [--bin LAZYATTN] [--draft FILE] [PYTEST ARGS...]
#
# PYTEST ARGS (e.g. unit/test_tokenize.py, -k name) run a subset; the list is then checked only
# for the tests that ran. --draft FILE writes the list this run would need (new failures marked
# `unclassified`, to be classified by hand). The JUnit XML and the log are kept in
# .llama-tools/server-suite-out/run-DATE-XXXX/ (a day).
#
# Exit 0: every failure listed and every listed test still failing. 1: not so (the differences
# are printed). 77 (CTest: skipped): PyPI cannot be reached and nothing is cached.
# Environment: LAZYATTN_BIN, LAZYATTN_SUITE_MODEL (see the wrapper), SUITE_TEST_TIMEOUT (seconds
# per test, default 120), PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CACHE=$ROOT/.llama-tools
VENV=$CACHE/server-suite-venv
# Each run its own output folder (runs at once, e.g. ctest and a subset by hand, must not share one).
OUTS=$CACHE/server-suite-out
LIST=$ROOT/tests/e2e/llama_server_suite_expected.txt
PY=${PYTHON:-python3}

log() { echo "[llama_server_suite] $*" >&2; }
die() { echo "[llama_server_suite] ERROR: $*" >&2; exit 1; }
skip() { echo "[llama_server_suite] SKIP: $*" >&2; exit 77; }

BIN=${LAZYATTN_BIN:-$ROOT/build/lazyattn}
DRAFT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --draft) DRAFT=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
done
[ -x "$BIN" ] || die "no lazyattn binary at $BIN (build it, or pass --bin)"
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")

# The suite's requirements.txt (aiohttp~=3.9.3, pytest~=8.3.3, pytest-xdist~=3.6, filelock~=3.16,
# numpy~=2.2.6, openai~=2.14.0, prometheus-client~=0.20.0, requests~=2.32.3, wget~=3.2) as pip
# resolved it on CPython 3.11, pinned; pytest-timeout turns a hung test into a failure.
REQUIREMENTS='aiohttp==3.9.5
aiosignal==1.4.0
annotated-types==0.8.0
anyio==4.16.0
attrs==26.1.0
certifi==2026.10.19.post1
charset-normalizer==3.5.3
distro==1.9.0
execnet==2.1.2
filelock==3.32.7
frozenlist==1.8.0
h11==0.16.0
httpcore==1.0.9
httpx==0.29.0
idna==3.21
iniconfig==2.3.1
jiter==0.19.0
multidict==6.9.1
numpy==2.2.6
openai==2.14.0
packaging==26.4
pluggy==1.7.0
prometheus-client==0.20.0
propcache==0.5.4
pydantic==2.14.4
pydantic-core==2.50.5
pytest==8.3.5
pytest-timeout==2.4.0
pytest-xdist==3.8.0
requests==2.32.5
sniffio==1.3.1
tqdm==4.70.1
typing-inspection==0.4.5
typing-extensions==4.16.0
urllib3==2.8.0
wget==3.2
yarl==1.25.1'

command -v "$PY" >/dev/null 2>&1 || skip "no $PY"
mkdir -p "$CACHE" "$OUTS"
find "$OUTS" -mindepth 1 -maxdepth 1 -type d -mtime +1 -exec rm -rf {} + 2>/dev/null || true
OUT=$(mktemp -d "$OUTS/run-$(date +%Y%m%d-%H%M%S)-XXXX")

# 1. The virtual environment (a stamp holding the requirements' hash marks a finished install).
want=$(printf '%s\n%s\n' "$REQUIREMENTS" "$("$PY" -c 'import sys; print(sys.version_info[:2])')" | sha256sum | cut -c1-16)
installed() { [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.installed" 2>/dev/null)" = "$want" ]; }
if ! installed; then
  exec 9>"$CACHE/.server-suite.lock"
  flock 9
  if ! installed; then
    log "installing the suite's requirements into $VENV"
    rm -rf "$VENV"
    "$PY" -m venv "$VENV" || die "could not create a virtual environment with $PY (apt-get install python3-venv)"
    printf '%s\n' "$REQUIREMENTS" > "$CACHE/.server-suite-requirements.txt"
    if ! PIP_FIND_LINKS= "$VENV/bin/python" -m pip --disable-pip-version-check -q install \
        --timeout 30 --retries 2 -r "$CACHE/.server-suite-requirements.txt" 2>"$OUT/pip.log"; then
      rm -rf "$VENV"
      if grep -qiE 'connection|resolve|network|timed out|no matching distribution' "$OUT/pip.log"; then
        tail -n 3 "$OUT/pip.log" >&2
        skip "PyPI cannot be reached and $VENV is not installed"
      fi
      cat "$OUT/pip.log" >&2
      die "pip install failed"
    fi
    echo "$want" > "$VENV/.installed"
  fi
  exec 9>&-
fi

# 2. The suite, from the pinned sdist.
if ! sources=$(scripts/build_llama_tools.sh --sources 2>"$OUT/sources.log"); then
  cat "$OUT/sources.log" >&2
  if grep -qiE 'connection|resolve|network|timed out|could not|no matching' "$OUT/sources.log"; then
    skip "the llama.cpp sources cannot be downloaded"
  fi
  die "scripts/build_llama_tools.sh --sources failed"
fi
SRC=$(printf '%s\n' "$sources" | sed -n 's/^LLAMA_CPP_SRC=//p' | tail -n1)
SUITE=$SRC/tools/server/tests
[ -f "$SUITE/utils.py" ] || die "no server test suite in $SRC"

# 3. Run it: one test at a time, on a port nobody listens on.
PORT=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
partial=()
selection=(unit -m "not slow")
if [ $# -gt 0 ]; then partial=(--partial); selection=("$@"); fi
log "running $SUITE (${selection[*]}) against $BIN on port $PORT; log: $OUT/pytest.log"
start=$(date +%s)
set +e
(cd "$SUITE" && PORT=$PORT LAZYATTN_BIN=$BIN LLAMA_SERVER_BIN_PATH=$ROOT/scripts/llama_server_wrapper.sh \
  "$VENV/bin/python" -m pytest -q -p no:cacheprovider --timeout "${SUITE_TEST_TIMEOUT:-120}" -o junit_logging=system-out \
  --junitxml="$OUT/junit.xml" "${selection[@]}") >"$OUT/pytest.log" 2>&1
rc=$?
set -e
log "pytest finished in $(( $(date +%s) - start )) s (exit $rc)"
tail -n 1 "$OUT/pytest.log" >&2
[ -f "$OUT/junit.xml" ] || { tail -n 40 "$OUT/pytest.log" >&2; die "pytest wrote no results (exit $rc)"; }

# 4. Compare with the list.
draft=()
[ -n "$DRAFT" ] && draft=(--draft "$DRAFT")
exec "$PY" scripts/compare_llama_server_suite.py "$OUT/junit.xml" "$LIST" "${partial[@]}" "${draft[@]}"
