#!/usr/bin/env bash
# `make finetune`: installs what is missing (the embedded model, the fine-tuning environment,
# llama.cpp's converter and llama-quantize), builds lazyattn and la_rag_layout, then runs
# scripts/finetune/finetune.py with the arguments given (FINETUNE_ARGS in make). Its last line
# of output is the path of the produced GGUF.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
./scripts/install_deps.sh >&2
[ -f "$BUILD_DIR/build.ninja" ] || cmake -S . -B "$BUILD_DIR" -G Ninja >&2
cmake --build "$BUILD_DIR" -j "$JOBS" --target lazyattn la_rag_layout >&2
PY=$(scripts/finetune/install.sh | tail -n 1)
exec "$PY" scripts/finetune/finetune.py --layout-bin "$BUILD_DIR/tools/la_rag_layout" "$@"
