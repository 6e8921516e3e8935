#!/usr/bin/env bash
# ctest fixture: puts llama.cpp's vocabulary GGUFs and their tokenizer test vectors
# (models/ggml-vocab-*.gguf with .inp/.out) in the ignored cache through
# scripts/build_llama_tools.sh --sources (llama-cpp-python's sdist from PyPI, fetched once), and
# writes OUT_FILE: "LLAMA_VOCAB_DIR=<folder>" for test_tokenizer_vectors to read. When pip cannot
# fetch from PyPI it writes "SKIPPED=<reason>" instead and the test skips saying so; any other
# failure fails this fixture (and so the tests that need it).
set -euo pipefail
OUT=${1:?usage: fetch_llama_vocabs.sh OUT_FILE}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$(dirname "$OUT")"
rm -f "$OUT"
LOG="$OUT.log"

if ! env_lines=$("$ROOT/scripts/build_llama_tools.sh" --sources 2>"$LOG"); then
  if grep -q "could not download" "$LOG"; then
    reason="pip could not fetch llama-cpp-python's sources from PyPI ($(tail -n1 "$LOG"))"
    echo "SKIPPED=$reason" > "$OUT"
    echo "$reason"
    exit 0
  fi
  cat "$LOG" >&2
  exit 1
fi
VOCAB_DIR=$(echo "$env_lines" | sed -n 's/^LLAMA_VOCAB_DIR=//p')
[ -f "$VOCAB_DIR/ggml-vocab-llama-spm.gguf.inp" ] || { echo "no tokenizer test vectors in '$VOCAB_DIR'" >&2; exit 1; }
echo "LLAMA_VOCAB_DIR=$VOCAB_DIR" > "$OUT"
echo "LLAMA_VOCAB_DIR=$VOCAB_DIR"
