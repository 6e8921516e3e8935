#!/usr/bin/env bash
# The evidence run of issue 63: the quality presets on the 500 (docs/benchmarks.md §4) and on the
# held-out families (480 questions a family), one thread at nice 19 so that it can run for hours
# beside other work. Every answer is appended to a progress file as it comes, so running this
# script again (same build) carries on where the last run stopped; what is answered so far is
# reported with `bench/issue63_evidence.sh report`. Writes under bench/out/ (ignored by git):
#   issue63_lazyattn                the binary of the whole run (a copy of build/lazyattn)
#   issue63_evidence.pid            the pid of the running script (a second start is refused)
#   issue63_evidence.log            progress lines (answered/total, rate, time left)
#   issue63_500.progress.jsonl      answers on the 500, then issue63_heldout.progress.jsonl
#   issue63_500.json, issue63_heldout.json, *.txt   the reports
# Start:  nohup bench/issue63_evidence.sh >/dev/null 2>&1 &
#         nohup bench/issue63_evidence.sh family bridge >/dev/null 2>&1 &   (one held-out family)
#         nohup bench/issue63_evidence.sh variant accurate >/dev/null 2>&1 &  (one variant on the 500)
# Stop:   kill $(cat bench/out/issue63_evidence.pid)   (the progress files keep what is done)
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
# nice alone yields only within a session: under the kernel's autogroup scheduling (a process
# started with setsid or nohup from another shell is its own group) the whole group must be
# niced too, or this run takes its share from a build or CI beside it.
echo 19 >/proc/self/autogroup 2>/dev/null || true
# One binary for the whole run, copied from build/ at the first start: the engine is being
# changed beside this run, and answers of two builds must not be paired. Remove the copy (and the
# progress files) to start over with a newer build.
bin=$out/issue63_lazyattn
[[ -x "$bin" ]] || cp "${LAZYATTN_BIN:-build/lazyattn}" "$bin"

# The 500: seed 1, 486 synthetic questions (kv hop agg, k = 2 5 10 20) and the 14 of the 2Wiki
# sample, as §4; none's answers there are reused (the same questions).
model=models/SmolLM2-135M-Instruct.Q4_1.gguf  # the embedded SmolLM2-135M-Instruct, §4's model
the_500=(bench quality --model $model --threads 1 --concurrency 1 --questions 486 --seed 1
         --variants lazy lazy:damp=16:-2 balanced balanced+damp=16:-2)
# The held-out families: attr bridge table, 480 each (120 per k), with full attention for the gap.
heldout=(bench quality --model $model --threads 1 --concurrency 1 --families heldout --questions 1440 --seed 1 --no-wiki
         --variants none lazy lazy:damp=16:-2 balanced balanced+damp=16:-2)

report() {
    local name=$1
    shift
    "$bin" "$@" --resume "$out/issue63_$name.progress.jsonl" --report-only --json "$out/issue63_$name.json" \
        >"$out/issue63_$name.txt" 2>&1 || true
    echo "$out/issue63_$name.txt"
}

# One run into issue63_NAME.{progress.jsonl,json,txt}, its progress lines in issue63_NAME.log:
#   run_logged NAME bench quality ...
run_logged() {
    local name=$1
    shift
    local log=$out/issue63_$name.log
    echo "start $(date -u +%FT%TZ) pid $$, $("$bin" --version | tr '\n' ' ')" >>"$log"
    nice -n 19 "$bin" "$@" --resume "$out/issue63_$name.progress.jsonl" --json "$out/issue63_$name.json" \
        >"$out/issue63_$name.txt" 2>>"$log"
    echo "$name done $(date -u +%FT%TZ)" >>"$log"
}

# One held-out family alone, into its own progress file (issue63_FAMILY.progress.jsonl), with the
# variants the decision needs (fast = lazy, balanced as it becomes with the damped sinks, and full
# attention for the gap): several families then run side by side, one core each. The questions are
# those of `--families FAMILY --questions 480` (120 per document count), a sample of the family's
# own, paired across the variants as in the combined run.
if [[ "${1:-}" == family ]]; then
    family=$2
    one_family=(bench quality --model $model --threads 1 --concurrency 1 --families "$family" --questions 480 --seed 1
                --no-wiki --variants none lazy balanced+damp=16:-2)
    if [[ "${3:-}" == report ]]; then
        report "$family" "${one_family[@]}"
        exit 0
    fi
    run_logged "$family" "${one_family[@]}"
    exit 0
fi

# One variant on the 500 alone, into issue63_500_FILE.progress.jsonl (FILE defaults to the variant's
# name; give one for a name with '+', which preset_evidence.py reads as a join): the same questions
# as the combined run, so two such processes (lazy and accurate, one core each) pair question by
# question: `preset_evidence.py --candidate accurate 500=A.progress.jsonl+B.progress.jsonl`.
if [[ "${1:-}" == variant ]]; then
    run_logged "500_${3:-$2}" bench quality --model $model --threads 1 --concurrency 1 --questions 486 --seed 1 \
        --variants "$2"
    exit 0
fi

if [[ "${1:-}" == report ]]; then
    report 500 "${the_500[@]}"
    [[ -f "$out/issue63_heldout.progress.jsonl" ]] && report heldout "${heldout[@]}"
    exit 0
fi

pidfile=$out/issue63_evidence.pid
if [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "already running: pid $(cat "$pidfile")" >&2
    exit 1
fi
echo $$ >"$pidfile"
trap 'rm -f "$pidfile"' EXIT
log=$out/issue63_evidence.log
echo "start $(date -u +%FT%TZ) pid $$, $("$bin" --version | tr '\n' ' ')" >>"$log"
nice -n 19 "$bin" "${the_500[@]}" --resume "$out/issue63_500.progress.jsonl" --json "$out/issue63_500.json" \
    >"$out/issue63_500.txt" 2>>"$log"
echo "the 500 done $(date -u +%FT%TZ)" >>"$log"
nice -n 19 "$bin" "${heldout[@]}" --resume "$out/issue63_heldout.progress.jsonl" \
    --json "$out/issue63_heldout.json" >"$out/issue63_heldout.txt" 2>>"$log"
echo "held-out done $(date -u +%FT%TZ)" >>"$log"
