#!/usr/bin/env bash
# Issue 63's steady-state measurement on the headline stream (docs/benchmarks.md §4, "Quality
# presets and conditioned copies made in the background"): bench rag's Zipf stream, no offline
# precompute, open-loop Poisson arrivals at FRACTION x S, S the closed-loop req/s of plain lazy on
# this machine (measured first unless given).
#  1. Forming: balanced on a fresh store directory, FORM requests reported in WINDOWS spans of
#     its time: how the conditioned copies form (share of lookups they serve, background rows,
#     TTFT and completions per span).
#  2. Steady state: ROUNDS rounds of lazy then balanced on that store, ROUND requests each, the
#     same stream (same seed and arrivals) every time: both read the documents' copies from the
#     store as a long-running server does (the plain ones for lazy, the conditioned ones for
#     balanced), and alternating the two lets a round's ratio cancel this host's drift (the same
#     run minutes apart differs by up to 1.5x here).
# bench/steady_report.py prints the tables and the ratios against the issue's targets (TTFT p50
# <= 1.15x lazy's, completions >= 0.9x). For an otherwise idle machine: the engine's threads are
# timed.
#   bench/issue63_steady.sh [FRACTION=0.6] [FORM=300] [ROUNDS=3] [ROUND=120] [WINDOWS=6]
#   S=1.54 bench/issue63_steady.sh 0.9 0    (S measured before: no closed loop; no forming: the
#                                            copies of the last run's store, bench/out/steady_store)
# Writes bench/out/steady_saturation.json, bench/out/steady_FRACTION/{forming,roundN_lazy,
# roundN_balanced}.json and bench/out/steady_FRACTION.txt (ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
fraction=${1:-0.6}
form=${2:-300}
rounds=${3:-3}
round=${4:-120}
windows=${5:-6}
out=bench/out
runs=$out/steady_$fraction
rm -rf "$runs"
mkdir -p "$runs"
bin=${LAZYATTN_BIN:-build/lazyattn}
stream=(bench rag --threads 2 --docs 40 --doc-tokens 512 --k 5 --zipf 1.2 --tail-tokens 32 --output-tokens 16
        --kv-budget-docs 13.34 --no-floor)
log=$out/steady_$fraction.txt
: >"$log"
say() { echo "$*" | tee -a "$log"; }

if [[ -n "${S:-}" ]]; then
    saturation=$S
else
    say "saturation: closed loop, 4 clients, plain lazy ($(date -u +%FT%TZ))"
    "$bin" "${stream[@]}" --clients 4 --requests 64 --warmup-requests 16 --modes lazy \
        --json "$out/steady_saturation.json" >>"$log" 2>&1
    saturation=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["runs"][0]["requests_per_s"])' \
        "$out/steady_saturation.json")
fi
rate=$(python3 -c "print(round($fraction * $saturation, 3))")
say "S = $saturation req/s; open loop at $rate req/s ($fraction S)"
# The store outlives the run: FORM=0 at another rate starts from the copies formed before.
store=$out/steady_store
if ((form > 0)); then
    rm -rf "$store"
    mkdir -p "$store"
    say "forming: balanced, $form requests ($(date -u +%FT%TZ)), store $store"
    "$bin" "${stream[@]}" --rate "$rate" --requests "$form" --warmup-requests 16 --windows "$windows" \
        --quality balanced --kv-store "$store" --json "$runs/forming.json" >>"$log" 2>&1
elif [[ ! -d $store ]]; then
    echo "FORM=0 needs the store of an earlier run ($store)" >&2
    exit 2
fi
for r in $(seq 1 "$rounds"); do
    for preset in lazy balanced; do
        if [[ $preset == lazy ]]; then which=(--modes lazy); else which=(--quality balanced); fi
        say "round $r: $preset, $round requests ($(date -u +%FT%TZ))"
        "$bin" "${stream[@]}" --rate "$rate" --requests "$round" --warmup-requests 16 --windows 1 \
            "${which[@]}" --kv-store "$store" --json "$runs/round${r}_$preset.json" >>"$log" 2>&1
    done
done

python3 bench/steady_report.py "$fraction S=$runs" | tee -a "$log"
