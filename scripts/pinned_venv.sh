# Sourced by the install_*_clients.sh scripts: one way to install pinned Python packages into an
# ignored virtual environment from an ignored wheel cache (downloaded from PyPI once; a second
# install on the same machine downloads nothing). The caller sets, then runs `pinned_venv_main "$@"`:
#   TOOL          the name its messages carry
#   VENV WHEELS   the environment and the wheel cache
#   PY            the Python that creates the environment
#   REQUIREMENTS  what the tests use, pinned; CONSTRAINTS: their dependencies as pip resolved them
#   PROBE         a package `pip index versions` asks PyPI for, to tell "offline" from "broken"
#   IMPORT_CHECK  Python code run in the environment: the proof that the install works
# A stamp holding the hash of the pins and the Python version marks a finished install (a second
# run returns at once). Exit 77 when PyPI cannot be reached and the cache cannot satisfy the pins
# (CTest: skipped).

log() { echo "[$TOOL] $*" >&2; }
die() { echo "[$TOOL] ERROR: $*" >&2; exit 1; }
skip() { echo "[$TOOL] SKIP: $*" >&2; exit 77; }

pinned_venv_main() {
  case "${1:-}" in
    --python) [ -f "$VENV/.installed" ] && [ -x "$VENV/bin/python" ] || exit 1; echo "$VENV/bin/python"; exit 0 ;;
    "") ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1'" ;;
  esac

  command -v "$PY" >/dev/null 2>&1 || skip "no $PY"
  local pyver want
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

  local start REQ CON VPY
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
    if ! pipq index versions "$PROBE" --timeout 15 --retries 1 >/dev/null 2>&1; then
      rm -rf "$VENV"
      skip "PyPI cannot be reached and $WHEELS cannot satisfy the requirements"
    fi
    pipq download -d "$WHEELS" -r "$REQ" -c "$CON" || { rm -rf "$VENV"; die "pip download failed"; }
    log "downloaded: $(ls "$WHEELS"/*.whl | wc -l) wheels, $(du -sh "$WHEELS" | cut -f1)"
    install_cached || { cat "$WHEELS/.install.log" >&2; rm -rf "$VENV"; die "pip install from $WHEELS failed"; }
    log "installed from $WHEELS"
  fi
  pipq check >&2 || die "the installed packages conflict (pip check)"

  printf '%s\n' "$IMPORT_CHECK" | "$VPY" - >&2 || die "the installed packages do not import"
  echo "$want" > "$VENV/.installed"
  log "installed in $VENV in $(( $(date +%s) - start )) s"
  echo "$VENV/bin/python"
}
