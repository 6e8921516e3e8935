#!/usr/bin/env bash
# Issue 63's steady-state measurement on the headline stream (docs/benchmarks.md §4, "Quality
# presets and conditioned copies made in the background"): bench rag's Zipf stream, no offline
# precompute, first closed loop to find the saturation rate S of plain lazy on this machine, then
# lazy and balanced back to back as open-loop Poisson arrivals at FRACTION x S, each on a fresh
# store directory (a shared one would hand balanced the plain copies lazy wrote), each reported
# in WINDOWS equal spans of its own time (conditioned share, TTFT p50/p99, completions per
# second). Prints the last span's ratios against the issue's targets (TTFT p50 <= 1.15x lazy's,
# completions >= 0.9x). For an otherwise idle machine: the engine's threads are timed.
#   bench/issue63_steady.sh [REQUESTS=300] [FRACTION=0.6] [WINDOWS=6]
# Writes bench/out/steady_{saturation,lazy,balanced}.json and bench/out/steady.txt (ignored).
set -euo pipefail
cd "$(dirname "$0")/.."
requests=${1:-300}
fraction=${2:-0.6}
windows=${3:-6}
out=bench/out
mkdir -p "$out"
bin=${LAZYATTN_BIN:-build/lazyattn}
stream=(bench rag --threads 2 --docs 40 --doc-tokens 512 --k 5 --zipf 1.2 --tail-tokens 32 --output-tokens 16
        --kv-budget-docs 13.34 --no-floor)
log=$out/steady.txt
: >"$log"
say() { echo "$*" | tee -a "$log"; }

say "saturation: closed loop, 4 clients, plain lazy ($(date -u +%FT%TZ))"
"$bin" "${stream[@]}" --clients 4 --requests 64 --warmup-requests 16 --modes lazy \
    --json "$out/steady_saturation.json" >>"$log" 2>&1
saturation=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["runs"][0]["requests_per_s"])' \
    "$out/steady_saturation.json")
rate=$(python3 -c "print(round($fraction * $saturation, 3))")
say "S = $saturation req/s; open loop at $rate req/s ($fraction S), $requests requests, $windows windows"

for preset in lazy balanced; do
    store=$(mktemp -d /tmp/la-steady-$preset.XXXXXX)
    if [[ $preset == lazy ]]; then which=(--modes lazy); else which=(--quality balanced); fi
    say "$preset ($(date -u +%FT%TZ)), store $store"
    "$bin" "${stream[@]}" --rate "$rate" --requests "$requests" --warmup-requests 16 --windows "$windows" \
        "${which[@]}" --kv-store "$store" --json "$out/steady_$preset.json" >>"$log" 2>&1
    rm -rf "$store"
done

python3 - "$out/steady_lazy.json" "$out/steady_balanced.json" <<'EOF' | tee -a "$log"
import json
import sys

lazy, balanced = (json.load(open(path))["runs"][0] for path in sys.argv[1:3])
print("span  share  TTFT p50 lazy / balanced (ms)  completions/s lazy / balanced")
for i, (l, b) in enumerate(zip(lazy["windows"], balanced["windows"])):
    print(f"{i + 1:4d}  {100 * b['conditioned_share']:4.0f}%  {l['ttft_p50_ms']:8.0f} / {b['ttft_p50_ms']:8.0f}"
          f"   {l['completed_per_s']:.3f} / {b['completed_per_s']:.3f}")
l, b = lazy["windows"][-1], balanced["windows"][-1]
p50, thr = b["ttft_p50_ms"] / l["ttft_p50_ms"], b["completed_per_s"] / l["completed_per_s"]
print(f"last span: TTFT p50 {p50:.2f}x lazy's (target <= 1.15x: {'met' if p50 <= 1.15 else 'missed'}), "
      f"completions {thr:.2f}x (target >= 0.9x: {'met' if thr >= 0.9 else 'missed'}), "
      f"conditioned share {100 * b['conditioned_share']:.0f}%")
EOF
