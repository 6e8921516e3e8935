#!/usr/bin/env bash
# Stands in for llama-server in llama.cpp's own server test suite (LLAMA_SERVER_BIN_PATH; see
# scripts/run_llama_server_suite.sh). It changes one thing only: the model download. The suite
# names its models as Hugging Face downloads (--hf-repo, --hf-file, --model-url), which cannot
# work offline and name models lazyattn does not run (llama.cpp's tiny test models); they are
# dropped, so `lazyattn serve` loads its default model, the embedded SmolLM2-135M-Instruct (or
# LAZYATTN_SUITE_MODEL when set). Every other argument reaches `lazyattn serve` as the suite
# wrote it.
#
# Environment: LAZYATTN_BIN (default build/lazyattn beside this script's repository),
# LAZYATTN_SUITE_MODEL (a GGUF file to serve instead of the default model).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${LAZYATTN_BIN:-$ROOT/build/lazyattn}

args=()
while [ $# -gt 0 ]; do
  case "$1" in
    # The download flags and their value (llama.cpp's short spellings too).
    --hf-repo | -hf | -hfr | --hf-file | -hff | --model-url | -mu) shift 2 || shift $# ;;
    --hf-repo=* | --hf-file=* | --model-url=*) shift ;;
    -m | --model | --model=*) has_model=1; args+=("$1"); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
if [ -n "${LAZYATTN_SUITE_MODEL:-}" ] && [ -z "${has_model:-}" ]; then args+=(--model "$LAZYATTN_SUITE_MODEL"); fi
exec "$BIN" serve "${args[@]}"
