#!/usr/bin/env bash
# `make bench`: the benchmarks, with 2 threads. Run it on an idle machine (timing on a busy one
# means little). Writes bench/out/.
#  1. prefill/decode speed against llama.cpp, alternating runs, medians of 5. BENCH_PEER picks
#     the peer:
#       llama-bench (default): llama.cpp's own llama-bench (scripts/build_llama_tools.sh builds
#         it from the llama-cpp-python sdist on first use, ~30-60 min once) on the embedded model
#         and the test models of BENCH_GGUF_GROUPS (default "smollm2 llama-1b"; add llama-8b for
#         the 8B Q4_K_M; "none" for the embedded model only), made on first use by
#         scripts/make_test_models.sh; pp512/tg128 per file into bench/out/speed_gguf.{md,json}.
#         BENCH_GGUF_FILES (space-separated paths) replaces the groups. The smollm2 group takes
#         ~15 min, the 1B files ~20 min, the 8B file ~30 min on 2 cores.
#       llama-cpp-python: the embedded model against llama-cpp-python (pip, built from source on
#         first use), bench/out/speed.json, as docs/benchmarks.md section 1 records;
#  2. the RAG serving benchmark at the default operating point (~15 min on 2 idle cores): 40
#     documents of 512 tokens, Zipf 1.2, k = 5, 4 closed-loop clients, a KV budget of a third of
#     the documents (RAG_BUDGET_DOCS), RAG_REQUESTS requests of which the first RAG_WARMUP are
#     warm-up (not measured), lazy / lazy-k / block-attn / prefix in-process plus the all-cached
#     floor; then the same token stream over HTTP (RAG_HTTP_REQUESTS requests after the warm-up;
#     llama-server gets only its last RAG_LLAMA_WARMUP, which its caches cannot outlive), `lazyattn
#     serve` against llama.cpp's llama-server (RAG_LLAMA_CONFIGS: one slot, and 4 slots with
#     --cache-reuse 256; add np=4 for 4 slots without it).
#     RAG_SWEEPS=1 adds the paper's sweeps (hours on 2 cores): TTFT p50/p99 and throughput
#     against KV budget, Zipf skew and Poisson arrival rate for all five modes, and capacity;
#  3. answer quality (EM, F1) per cache mode on the 2WikiMultihopQA sample; QUALITY_FRONTIER=1 adds
#     the accuracy-against-TTFT frontier of every document reuse setting (~2 h);
#  4. the persistent KV store (~2 min): TTFT of a 5-document request whose documents come from
#     recompute, the RAM pool, a disk directory and a redis-server started here (when installed),
#     and the all-cached floor, into bench/out/store.json.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=bench/out
mkdir -p "$OUT"
PEER=${BENCH_PEER:-llama-bench}
case "$PEER" in
  llama-bench|llama-cpp-python) ;;
  *) echo "BENCH_PEER must be llama-bench or llama-cpp-python, not '$PEER'" >&2; exit 2 ;;
esac
python3 -c "import matplotlib" 2>/dev/null || python3 -m pip install -q matplotlib

if [ "$PEER" = llama-bench ]; then
  echo "== 1/3 prefill and decode speed per GGUF file: lazyattn vs llama.cpp's llama-bench"
  ./scripts/build_llama_tools.sh >/dev/null
  files=(models/SmolLM2-135M-Instruct.Q4_1.gguf)
  if [ -n "${BENCH_GGUF_FILES:-}" ]; then
    files=(${BENCH_GGUF_FILES})
  else
    groups=(${BENCH_GGUF_GROUPS:-smollm2 llama-1b})
    if [ "${groups[*]}" != none ]; then
      ./scripts/make_test_models.sh "${groups[@]}"
      while read -r f; do files+=("$f"); done < <(./scripts/make_test_models.sh --paths "${groups[@]}")
    fi
  fi
  python3 bench/speed_vs_llama_bench.py --threads "${BENCH_THREADS:-2}" --reps "${BENCH_REPS:-5}" \
    --prompt-tokens "${BENCH_PROMPT_TOKENS:-512}" --gen-tokens "${BENCH_GEN_TOKENS:-128}" \
    --out "$OUT/speed_gguf" --models "${files[@]}"
else
  ./scripts/install_llama_cpp.sh
  echo "== 1/3 prefill and decode speed: lazyattn vs llama.cpp (llama-cpp-python)"
  python3 bench/speed_vs_llama_cpp.py --threads "${BENCH_THREADS:-2}" --reps "${BENCH_REPS:-5}" \
    --prompt-tokens ${BENCH_PROMPT_TOKENS:-512} --out "$OUT/speed.json"
fi

echo
echo "== 2/4 RAG serving benchmark under a KV budget (warm-up excluded), then over HTTP against llama-server"
RAG_ARGS=(--threads "${BENCH_THREADS:-2}" --docs 40 --doc-tokens 512 --k 5 --zipf 1.2 --tail-tokens 32
  --output-tokens 16 --clients 4 --kv-budget-docs "${RAG_BUDGET_DOCS:-13.34}")
SWEEP_ARGS=()
if [ "${RAG_SWEEPS:-0}" = 1 ]; then
  SWEEP_ARGS=(--budget-sweep-docs 4 6 8 13.34 20 30 40 48 --skew-sweep 0 0.6 1.2 2.1 --rates 0.2 0.5 1
    --capacity-docs 5 10 20 --sweep-requests "${RAG_SWEEP_REQUESTS:-60}" --sweep-warmup-requests 15)
fi
build/lazyattn bench rag "${RAG_ARGS[@]}" --requests "${RAG_REQUESTS:-72}" --warmup-requests "${RAG_WARMUP:-16}" \
  --modes lazy lazy-k block-attn prefix ${SWEEP_ARGS[@]+"${SWEEP_ARGS[@]}"} \
  --export-workload "$OUT/rag_workload.json" --json "$OUT/rag.json"
python3 bench/plot_rag.py "$OUT/rag.json" --out "$OUT"
./scripts/build_llama_tools.sh >/dev/null  # llama-server, built once from the llama-cpp-python sdist
eval "$(./scripts/build_llama_tools.sh --env)"
# ~17 s of llama-server prefill per request on 2 cores: 8 measured + 2 warm-up per configuration
# keeps this part near 6 minutes (docs/benchmarks.md reports RAG_HTTP_REQUESTS=12,
# RAG_LLAMA_WARMUP=4 and RAG_LLAMA_CONFIGS="np=1 np=4 np=4,reuse=256").
python3 bench/peer/http_rag_compare.py --workload "$OUT/rag_workload.json" --requests "${RAG_HTTP_REQUESTS:-8}" \
  --warmup "${RAG_WARMUP:-16}" --llama-warmup "${RAG_LLAMA_WARMUP:-2}" --clients 4 --threads "${BENCH_THREADS:-2}" \
  --lazyattn build/lazyattn --llama-bin "$LLAMA_TOOLS_BIN" --llama ${RAG_LLAMA_CONFIGS:-np=1 np=4,reuse=256} --json "$OUT/rag_http.json" --plot "$OUT/rag_http_ttft.png"

echo
echo "== 3/4 answer quality: ${QUALITY_QUESTIONS:-486} synthetic questions + the 2Wiki sample, per document reuse setting"
# ~1 s per question and variant sharing no document encoding on 2 cores; QUALITY_QUESTIONS=60 for a look.
build/lazyattn bench quality --threads "${BENCH_THREADS:-2}" --questions "${QUALITY_QUESTIONS:-486}" \
  --variants ${QUALITY_VARIANTS:-none lazy lazy:anchor lazy:recompute=32 lazy:anchor+recompute=16} \
  --json "$OUT/quality.json"
python3 bench/plot_quality.py "$OUT/quality.json" "$OUT"
if [ "${QUALITY_FRONTIER:-0}" = 1 ]; then
  # docs/benchmarks.md §4, "The frontier on the 500 questions": every lazy-mode setting in one run
  # (they share each document's plain encoding; ~100 min on 2 cores), their TTFTs under the
  # headline budget (~25 min), then the table and the plot against the run above (none, lazy).
  FRONTIER=(lazy lazy:anchor lazy:recompute=5% lazy:recompute=10% lazy:recompute=15% lazy:recompute=25%
    lazy:recompute=5%@query lazy:recompute=10%@query lazy:recompute=15%@query lazy:recompute=25%@query
    lazy:recompute=15%@deviation lazy:recompute=15%@random lazy:recompute=15%@first-query
    lazy:neighbours=1 lazy:neighbours=1+recompute=15% lazy:neighbours=1+recompute=15%@query)
  build/lazyattn bench quality --threads "${BENCH_THREADS:-2}" --questions "${QUALITY_QUESTIONS:-486}" \
    --concurrency 2 --variants "${FRONTIER[@]}" --json "$OUT/quality_frontier.json"
  build/lazyattn bench rag "${RAG_ARGS[@]}" --requests "${RAG_REQUESTS:-72}" --warmup-requests "${RAG_WARMUP:-16}" \
    --preamble-tokens 32 --no-floor --modes "${FRONTIER[@]}" prefix --json "$OUT/rag_frontier.json"
  python3 bench/quality_frontier.py --quality "$OUT/quality.json" "$OUT/quality_frontier.json" \
    --rag "$OUT/rag_frontier.json" --alias prefix=none --markdown "$OUT/frontier.md" --plot "$OUT/frontier.png"
fi

echo
echo "== 4/4 the persistent KV store: TTFT by where a request's documents come from"
STORE_DIR=$(mktemp -d)
STORE_ARGS=(--kv-store "$STORE_DIR")
REDIS_PID=""
if command -v redis-server >/dev/null 2>&1; then
  REDIS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --loglevel warning &
  REDIS_PID=$!
  # Stopped however this script ends (error, SIGTERM, SIGINT), not only after the benchmark.
  trap 'kill "$REDIS_PID" 2>/dev/null; rm -rf "$STORE_DIR"' EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
  for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  STORE_ARGS+=(--kv-store "redis://127.0.0.1:$REDIS_PORT")
fi
build/lazyattn bench store --threads "${BENCH_THREADS:-2}" --k 5 --doc-tokens 512 --repetitions "${STORE_REPS:-12}" \
  "${STORE_ARGS[@]}" --json "$OUT/store.json" || status=$?
[ -n "$REDIS_PID" ] && kill "$REDIS_PID"
rm -rf "$STORE_DIR"
exit "${status:-0}"
