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
#   S=1.3 bench/issue63_steady.sh 300 0.9     (S measured before: no closed loop)
# Writes bench/out/steady_saturation.json, steady_FRACTION_{lazy,balanced}.json and
# steady_FRACTION.txt (ignored); bench/steady_report.py reads pairs of runs into tables and a plot.
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
log=$out/steady_$fraction.txt
: >"$log"
say() { echo "$*" | tee -a "$log"; }

if [[ -n "${S:-}" ]]; then
    saturation=$S
    say "S = $saturation req/s, given"
else
    say "saturation: closed loop, 4 clients, plain lazy ($(date -u +%FT%TZ))"
    "$bin" "${stream[@]}" --clients 4 --requests 64 --warmup-requests 16 --modes lazy \
        --json "$out/steady_saturation.json" >>"$log" 2>&1
    saturation=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["runs"][0]["requests_per_s"])' \
        "$out/steady_saturation.json")
fi
rate=$(python3 -c "print(round($fraction * $saturation, 3))")
say "S = $saturation req/s; open loop at $rate req/s ($fraction S), $requests requests, $windows windows"

for preset in lazy balanced; do
    store=$(mktemp -d /tmp/la-steady-$preset.XXXXXX)
    if [[ $preset == lazy ]]; then which=(--modes lazy); else which=(--quality balanced); fi
    say "$preset ($(date -u +%FT%TZ)), store $store"
    "$bin" "${stream[@]}" --rate "$rate" --requests "$requests" --warmup-requests 16 --windows "$windows" \
        "${which[@]}" --kv-store "$store" --json "$out/steady_${fraction}_$preset.json" >>"$log" 2>&1
    rm -rf "$store"
done

python3 bench/steady_report.py "$fraction S=$out/steady_${fraction}_lazy.json,$out/steady_${fraction}_balanced.json" \
    | tee -a "$log"
