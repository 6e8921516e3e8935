#!/usr/bin/env bash
# Installs the official API clients the server's client tests drive against `lazyattn serve`
# (Anthropic's `anthropic` SDK: tests/server/test_anthropic_client.py) into the ignored virtual
# environment .venv-api-clients/, from wheels cached in the ignored .whl-api/ (downloaded from
# PyPI once; a second install on the same machine downloads nothing). Never needed by the engine
# or `make run`.
#
#   scripts/install_api_clients.sh            install (if needed); print the environment's python
#   scripts/install_api_clients.sh --python   print the environment's python and exit 0 if it is
#                                             installed (1 if not), installing nothing
#
# Idempotent: a stamp holding the requirements' hash marks a finished install (a second run
# returns at once). Exit 77 when PyPI cannot be reached and the wheel cache cannot satisfy the
# requirements (CTest: skipped).
# Environment: API_CLIENTS_VENV (default .venv-api-clients), API_CLIENTS_WHEELS (default
# .whl-api), PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${API_CLIENTS_VENV:-$ROOT/.venv-api-clients}
WHEELS=${API_CLIENTS_WHEELS:-$ROOT/.whl-api}
PY=${PYTHON:-python3}

log() { echo "[install_api_clients] $*" >&2; }
die() { echo "[install_api_clients] ERROR: $*" >&2; exit 1; }
skip() { echo "[install_api_clients] SKIP: $*" >&2; exit 77; }

# The clients, pinned: what the tests exercise.
REQUIREMENTS='anthropic==2.17.0'
# Their dependencies, as pip resolved the pins above on CPython 3.11 (a constraint: a Python that
# needs a package more gets it at the newest version).
CONSTRAINTS='annotated-types==0.8.0
anyio==4.16.0
docstring-parser==0.18.0
h11==0.16.0
httpcore2==2.17.0
httpx2==2.17.0
idna==3.21
jiter==0.19.0
opentelemetry-api==1.45.3
pydantic==2.14.4
pydantic-core==2.50.5
sniffio==1.3.1
truststore==0.10.5
typing-inspection==0.4.5
typing-extensions==4.16.0'

case "${1:-}" in
  --python) [ -f "$VENV/.installed" ] && [ -x "$VENV/bin/python" ] || exit 1; echo "$VENV/bin/python"; exit 0 ;;
  "") ;;
  -h|--help) sed -n '2,/^set -e/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument '$1'" ;;
esac

command -v "$PY" >/dev/null 2>&1 || skip "no $PY"
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
want="$(printf '%s\n%s\n%s\n' "$REQUIREMENTS" "$CONSTRAINTS" "$pyver" | sha256sum | cut -c1-16)"
installed() { [ -x "$VENV/bin/python" ] && [ -f "$VENV/.installed" ] && [ "$(cat "$VENV/.installed")" = "$want" ]; }
if installed; then
  log "already installed in $VENV"
  echo "$VENV/bin/python"
  exit 0
fi

mkdir -p "$WHEELS"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$WHEELS/.lock"
  flock 9
  if installed; then echo "$VENV/bin/python"; exit 0; fi
fi

start=$(date +%s)
REQ="$WHEELS/.requirements.txt"
CON="$WHEELS/.constraints.txt"
printf '%s\n' "$REQUIREMENTS" > "$REQ"
printf '%s\n' "$CONSTRAINTS" > "$CON"

log "creating $VENV (python $pyver)"
rm -rf "$VENV"
"$PY" -m venv "$VENV" || die "could not create a virtual environment with $PY (apt-get install python3-venv)"
VPY="$VENV/bin/python"
# Only the wheel cache and PyPI: no find-links from the environment (PIP_FIND_LINKS).
pipq() { PIP_FIND_LINKS= "$VPY" -m pip --disable-pip-version-check -q "$@"; }
install_cached() { pipq install --no-index --find-links "$WHEELS" -r "$REQ" -c "$CON" 2>"$WHEELS/.install.log"; }

if ls "$WHEELS"/*.whl >/dev/null 2>&1 && install_cached; then
  log "installed from the wheel cache $WHEELS"
else
  log "the wheel cache $WHEELS does not hold every wheel; downloading the rest from PyPI"
  if ! pipq index versions anthropic --timeout 15 --retries 1 >/dev/null 2>&1; then
    rm -rf "$VENV"
    skip "PyPI cannot be reached and $WHEELS cannot satisfy the requirements"
  fi
  pipq download -d "$WHEELS" -r "$REQ" -c "$CON" || { rm -rf "$VENV"; die "pip download failed"; }
  log "downloaded: $(ls "$WHEELS"/*.whl | wc -l) wheels, $(du -sh "$WHEELS" | cut -f1)"
  install_cached || { cat "$WHEELS/.install.log" >&2; rm -rf "$VENV"; die "pip install from $WHEELS failed"; }
  log "installed from $WHEELS"
fi
pipq check >&2 || die "the installed packages conflict (pip check)"

# Proof that it works: every client imports, at the pinned version.
"$VPY" - <<'PY' >&2 || die "the installed clients do not import"
from importlib.metadata import version
import anthropic
print("[install_api_clients] ok: anthropic %s" % version("anthropic"))
PY
echo "$want" > "$VENV/.installed"
log "installed in $VENV in $(( $(date +%s) - start )) s"
echo "$VENV/bin/python"
