#!/usr/bin/env bash
# `make bench`: the benchmarks, on the embedded model with 2 threads, in under 15 minutes on
# 2 cores. Run it on an idle machine (timing on a busy one means little). Writes bench/out/.
#  1. prefill/decode speed against llama.cpp (llama-cpp-python, built from source on first use),
#     alternating runs, medians of 5;
#  2. the RAG serving benchmark: every cache mode on one seeded Zipf request stream, the
#     all-cached floor, and skew, arrival-rate and pool-capacity sweeps, with PNG plots;
#  3. answer quality (EM, F1) per cache mode on the 2WikiMultihopQA sample.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out
mkdir -p "$OUT"
./scripts/install_llama_cpp.sh
python3 -c "import matplotlib" 2>/dev/null || python3 -m pip install -q matplotlib

echo "== 1/3 prefill and decode speed: lazyattn vs llama.cpp"
python3 bench/speed_vs_llama_cpp.py --threads "${BENCH_THREADS:-2}" --reps "${BENCH_REPS:-5}" \
  --prompt-tokens ${BENCH_PROMPT_TOKENS:-512} --out "$OUT/speed.json"

echo
echo "== 2/3 RAG serving benchmark"
build/lazyattn bench rag --threads "${BENCH_THREADS:-2}" \
  --docs 100 --doc-tokens 512 --k 5 --zipf 2.1 --tail-tokens 32 --output-tokens 16 \
  --requests "${RAG_REQUESTS:-24}" --clients 4 \
  --skew-sweep 0 1.2 2.1 --rates 0.3 --capacity-docs 5 20 --sweep-requests "${RAG_SWEEP_REQUESTS:-8}" \
  --json "$OUT/rag.json"
python3 bench/plot_rag.py "$OUT/rag.json" --out "$OUT"

echo
echo "== 3/3 answer quality on data/2wiki_sample.jsonl"
build/lazyattn bench quality --threads "${BENCH_THREADS:-2}" --json "$OUT/quality.json"
