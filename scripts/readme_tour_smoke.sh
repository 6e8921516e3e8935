#!/usr/bin/env bash
# A newcomer's walk of README.md's Quick tour: every `build/lazyattn` line of the tour at its
# small size, run from a scratch directory (so no default may depend on the working directory),
# each under a time limit. Skipped, with the reason printed: the full-size benchmark lines (the
# line after a "first try"), lines that need what a fresh machine lacks (a running Redis,
# llama-server, other.gguf, keys.txt), and servers without --check (they would run until stopped).
#
#   scripts/readme_tour_smoke.sh [BUILD_DIR]     (default: build; exit 1 on the first failure)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "${1:-$ROOT/build}" && pwd)/lazyattn
[ -x "$BIN" ] || { echo "readme_tour_smoke: no $BIN; build the lazyattn target first" >&2; exit 1; }
# The tour runs the embedded model (make run / make test install it); without it: skipped (77).
[ -f "$ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf" ] || [ -n "${LAZYATTN_MODEL:-}" ] ||
  { echo "readme_tour_smoke: no embedded model (models/); skipped"; exit 77; }
LIMIT=${TOUR_LINE_TIMEOUT:-300}
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
cd "$SCRATCH"
printf 'Paris is the capital of France.\n' >a.txt  # the tour's --doc files
printf 'Berlin is the capital of Germany.\n' >b.txt

# The tour's block, continuation lines joined.
mapfile -t LINES < <(awk '/^## Quick tour/{t=1} t&&/^```sh/{b=1;next} b&&/^```/{exit} b' "$ROOT/README.md" |
  sed -e ':a' -e '/\\$/N; s/\\\n *//; ta')
skip_next=0
for line in "${LINES[@]}"; do
  case "$line" in
    "#"*"first try"*) skip_next=2; continue ;;  # run the first command after it, skip the second
    "#"*|"") continue ;;
  esac
  cmd=${line%%#*}  # drop a trailing comment
  if [ "$skip_next" = 1 ]; then skip_next=0; echo "-- skipped (full size): $cmd"; continue; fi
  [ "$skip_next" = 2 ] && skip_next=1
  case "$cmd" in
    *redis://*|*llama_tools*|*http_rag_compare*|*other.gguf*|*keys.txt*|*/var/cache*)
      echo "-- skipped (needs a service or file): $cmd"; continue ;;
    *synthetic:llama-1b*) echo "-- skipped (1B random weights: minutes on 2 cores): $cmd"; continue ;;
    *" serve "*) [[ "$cmd" == *--check* ]] || { echo "-- skipped (runs until stopped): $cmd"; continue; } ;;
    build/lazyattn*) ;;
    *) echo "-- skipped (not lazyattn): $cmd"; continue ;;
  esac
  cmd=${cmd//build\/lazyattn/$BIN}
  cmd=${cmd//models\/SmolLM2-135M-Instruct.Q4_1.gguf/$ROOT/models/SmolLM2-135M-Instruct.Q4_1.gguf}
  cmd=${cmd//data\/2wiki_sample.jsonl/$ROOT/data/2wiki_sample.jsonl}
  echo "== $cmd"
  start=$(date +%s)
  if ! timeout "$LIMIT" bash -c "$cmd" >"$SCRATCH/out.txt" 2>&1; then
    tail -20 "$SCRATCH/out.txt"
    echo "readme_tour_smoke: FAILED (or over ${LIMIT}s): $cmd" >&2
    exit 1
  fi
  echo "   ok in $(( $(date +%s) - start )) s"
done
echo "readme_tour_smoke: every runnable tour line passed"
