#!/usr/bin/env bash
# Issue 63's steady-state measurement on the headline stream (docs/benchmarks.md §4, "Quality
# presets and conditioned copies made in the background"): bench rag's Zipf stream, no offline
# precompute, one --kv-store directory that outlives each run, as a long-running server's does.
#  1. S_cold: the closed-loop req/s of plain lazy in RAM only (every document computed when the
#     13.3-document pool lost it): what a server can take while its documents are new.
#  2. Forming: balanced on a fresh store, Poisson arrivals at 0.6 S_cold, FORM requests reported
#     in 6 spans of its time: how the conditioned copies form (share of lookups they serve,
#     background rows, TTFT, TPOT and completions per span).
#  3. Closed loop on the formed store: ROUNDS rounds of lazy then balanced, 4 clients; S, the
#     saturation once documents come from the store, is lazy's mean req/s.
#  4. Open loop on the formed store: for each of FRACTIONS of S_cold and of S, ROUNDS rounds of
#     lazy then balanced, ROUND requests each, the same stream (same seed and arrivals) every
#     time: alternating lets a round's ratio cancel this host's drift (the same run minutes
#     apart differs by up to 1.5x here); the rounds' spread says what is left.
# bench/steady_report.py prints the tables and the ratios against the issue's targets (TTFT p50
# <= 1.15x lazy's, req/s >= 0.9x). For an otherwise idle machine: the engine's threads are timed.
#   bench/issue63_steady.sh [FORM=240] [ROUNDS=3] [ROUND=120] [FRACTIONS="0.6 0.9"]
#   S_COLD=1.54 S=5.40 bench/issue63_steady.sh 0     (both known, the store formed: rounds only)
# Writes bench/out/steady/{forming.json,closed/,cold_F/,store_F/} and bench/out/steady.txt
# (ignored by git); ~40 minutes with the defaults.
set -euo pipefail
cd "$(dirname "$0")/.."
form=${1:-240}
rounds=${2:-3}
round=${3:-120}
fractions=${4:-0.6 0.9}
out=bench/out
runs=$out/steady
store=$out/steady_store
bin=${LAZYATTN_BIN:-build/lazyattn}
stream=(bench rag --threads 2 --docs 40 --doc-tokens 512 --k 5 --zipf 1.2 --tail-tokens 32 --output-tokens 16
        --kv-budget-docs 13.34 --no-floor)
log=$out/steady.txt
mkdir -p "$runs"
: >"$log"
say() { echo "$*" | tee -a "$log"; }
req_s() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["runs"][0]["requests_per_s"])' "$1"; }
mean_req_s() {
    python3 -c 'import json, sys; v = [json.load(open(p))["runs"][0]["requests_per_s"] for p in sys.argv[1:]]
print(round(sum(v) / len(v), 3))' "$@"
}
# ROUNDS rounds of lazy then balanced on the store into directory $1, with the arrival arguments after it.
alternate() {
    local dir=$1
    shift
    rm -rf "$dir"
    mkdir -p "$dir"
    for r in $(seq 1 "$rounds"); do
        for preset in lazy balanced; do
            if [[ $preset == lazy ]]; then which=(--modes lazy); else which=(--quality balanced); fi
            say "$(basename "$dir") round $r: $preset ($(date -u +%FT%TZ))"
            "$bin" "${stream[@]}" "$@" --warmup-requests 16 --windows 1 "${which[@]}" --kv-store "$store" \
                --json "$dir/round${r}_$preset.json" >>"$log" 2>&1
        done
    done
}

if [[ -z "${S_COLD:-}" ]]; then
    say "S_cold: closed loop, 4 clients, plain lazy, RAM only ($(date -u +%FT%TZ))"
    "$bin" "${stream[@]}" --clients 4 --requests 64 --warmup-requests 16 --modes lazy \
        --json "$runs/saturation_cold.json" >>"$log" 2>&1
    S_COLD=$(req_s "$runs/saturation_cold.json")
fi
say "S_cold = $S_COLD req/s"
if ((form > 0)); then
    rm -rf "$store"
    mkdir -p "$store"
    rate=$(python3 -c "print(round(0.6 * $S_COLD, 3))")
    say "forming: balanced on a fresh store at $rate req/s, $form requests ($(date -u +%FT%TZ))"
    "$bin" "${stream[@]}" --rate "$rate" --requests "$form" --warmup-requests 16 --windows 6 \
        --quality balanced --kv-store "$store" --json "$runs/forming.json" >>"$log" 2>&1
elif [[ ! -d $store ]]; then
    echo "FORM=0 needs the store of an earlier run ($store)" >&2
    exit 2
fi
if [[ -z "${S:-}" ]]; then
    alternate "$runs/closed" --clients 4 --requests 96
    S=$(mean_req_s "$runs"/closed/round*_lazy.json)
fi
say "S = $S req/s (lazy, closed loop on the store)"
for f in $fractions; do
    alternate "$runs/cold_$f" --rate "$(python3 -c "print(round($f * $S_COLD, 3))")" --requests "$round"
    alternate "$runs/store_$f" --rate "$(python3 -c "print(round($f * $S, 3))")" --requests "$round"
done

sets=()
[[ -f $runs/forming.json ]] && sets+=("forming=$runs")
[[ -d $runs/closed ]] && sets+=("closed loop=$runs/closed")
for f in $fractions; do sets+=("$f S_cold=$runs/cold_$f" "$f S=$runs/store_$f"); done
python3 bench/steady_report.py "${sets[@]}" | tee -a "$log"
