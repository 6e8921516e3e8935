#!/usr/bin/env bash
# `make bench`: lazyattn against llama.cpp (llama-cpp-python, built from source on first use) on
# the embedded model, 2 threads, medians of 5 alternating runs. Run it on an idle machine.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_llama_cpp.sh
python3 bench/speed_vs_llama_cpp.py --threads "${BENCH_THREADS:-2}" --reps "${BENCH_REPS:-5}" \
  --prompt-tokens ${BENCH_PROMPT_TOKENS:-512}
