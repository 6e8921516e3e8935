#!/usr/bin/env bash
# ctest fixture: puts llama.cpp's chat templates in the ignored cache (scripts/build_llama_tools.sh
# --sources, which downloads llama-cpp-python's sdist from PyPI once) and renders each with Python's
# jinja2 into OUT_DIR (tests/unit/template/render_reference.py). When PyPI cannot be reached it
# writes OUT_DIR/SKIPPED with the reason, and the comparison test skips saying so; any other
# failure (no jinja2, a broken script) fails this fixture.
set -euo pipefail
OUT=${1:?usage: make_reference.sh OUT_DIR}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
PY=${PYTHON:-python3}
mkdir -p "$OUT"
rm -f "$OUT/SKIPPED"

if ! env_lines=$("$ROOT/scripts/build_llama_tools.sh" --sources 2>"$OUT/fetch.log"); then
  if grep -q "could not download" "$OUT/fetch.log"; then
    echo "pip could not fetch llama-cpp-python's sources from PyPI ($(tail -n1 "$OUT/fetch.log"))" > "$OUT/SKIPPED"
    cat "$OUT/SKIPPED"
    exit 0
  fi
  cat "$OUT/fetch.log" >&2
  exit 1
fi
VOCAB_DIR=$(echo "$env_lines" | sed -n 's/^LLAMA_VOCAB_DIR=//p')
[ -d "$VOCAB_DIR/templates" ] || { echo "no templates folder in $VOCAB_DIR" >&2; exit 1; }
"$PY" -c "import jinja2" || { echo "python3-jinja2 is missing: run scripts/install_deps.sh" >&2; exit 1; }
exec "$PY" "$ROOT/tests/unit/template/render_reference.py" "$VOCAB_DIR/templates" "$OUT"
