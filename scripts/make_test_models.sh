#!/usr/bin/env bash
# Makes the GGUF files the speed and compatibility tests run on, into models/ (ignored), each
# only when missing (a second call is a manifest print). Needs llama.cpp's llama-quantize, built on
# first use by scripts/build_llama_tools.sh (LLAMA_TOOLS_JOBS=2: ~10 min on 2 idle cores, once).
#
#   scripts/make_test_models.sh                 every group below (8B skipped if the disk is short)
#   scripts/make_test_models.sh smollm2 llama-1b  only these groups
#   scripts/make_test_models.sh FILE.gguf ...   only these files (names from the manifest)
#   scripts/make_test_models.sh --list          the manifest only (what exists, sizes); no work
#   scripts/make_test_models.sh --paths [GROUP] existing files of the groups, one path a line
#
# Groups:
#   smollm2   the embedded SmolLM2-135M-Instruct (Q4_1) re-quantized by llama-quantize
#             --allow-requantize to every preset (lossy, fine for speed tests). Its hidden size
#             576 is not a multiple of 256: in the K presets llama-quantize falls back to
#             Q4_0/Q5_0/Q5_1/Q8_0 for the 576-wide matrices, so only ffn_down (and in Q4_K_M and
#             Q5_K_M some attn_v) is K-quantized; the synthetic Llama shapes are K-quantized fully.
#   llama-1b  a random-weight Llama-3.2-1B (16 layers, hidden 2048, 32/8 heads x 64, ffn 8192,
#             vocab 128256, Llama-3 tokenizer and rope scaling, tied embeddings), written in F16
#             by scripts/write_synthetic_gguf.py, then quantized: F16, Q8_0, Q4_K_M.
#   llama-8b  a random-weight Llama-3.1-8B (32 layers, hidden 4096, 32/8 heads x 128, ffn 14336,
#             vocab 128256, untied): Q4_K_M only; the 16 GB F16 intermediate is deleted after.
#
# Environment: MODELS_DIR (default models), QUANT_THREADS (default 2), SMOLLM2_TYPES (override
# the preset list), LLAMA_1B_TYPES (default "F16 Q8_0 Q4_K_M"), LLAMA_8B_TYPES (default Q4_K_M).
set -euo pipefail
cd "$(dirname "$0")/.."

MODELS=${MODELS_DIR:-models}
THREADS=${QUANT_THREADS:-2}
PY=${PYTHON:-python3}
SRC_SMOL="$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_TYPES=(${SMOLLM2_TYPES:-Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_M Q4_K_S Q4_K_M Q5_K_M Q6_K F16 BF16})
LLAMA_1B_TYPES=(${LLAMA_1B_TYPES:-F16 Q8_0 Q4_K_M})
LLAMA_8B_TYPES=(${LLAMA_8B_TYPES:-Q4_K_M})
SMOL_PREFIX="$MODELS/SmolLM2-135M-Instruct-requant"
L1B_PREFIX="$MODELS/synthetic-Llama-3.2-1B"
L8B_PREFIX="$MODELS/synthetic-Llama-3.1-8B"
GIB=$((1024 * 1024 * 1024))

log() { echo "[make_test_models] $*"; }
die() { echo "[make_test_models] ERROR: $*" >&2; exit 1; }

files_of() {  # group -> expected files
  case "$1" in
    smollm2)  for t in "${SMOLLM2_TYPES[@]}"; do echo "$SMOL_PREFIX.$t.gguf"; done ;;
    llama-1b) for t in "${LLAMA_1B_TYPES[@]}"; do echo "$L1B_PREFIX.$t.gguf"; done ;;
    llama-8b) for t in "${LLAMA_8B_TYPES[@]}"; do echo "$L8B_PREFIX.$t.gguf"; done ;;
    *) die "unknown group '$1' (smollm2, llama-1b, llama-8b)" ;;
  esac
}
GROUPS_ALL=(smollm2 llama-1b llama-8b)

manifest() {
  log "manifest ($MODELS/):"
  local g f
  for g in "${GROUPS_ALL[@]}"; do
    while read -r f; do
      if [ -f "$f" ]; then
        printf '  %-8s %8s  %s\n' "$g" "$(du -h --apparent-size "$f" | cut -f1)" "$f"
      else
        printf '  %-8s %8s  %s\n' "$g" "missing" "$f"
      fi
    done < <(files_of "$g")
  done
}

avail_bytes() { df -P -B1 "$MODELS" | awk 'NR==2 {print $4}'; }

# --- arguments ---------------------------------------------------------------------------------
want_groups=()
want_files=()
case "${1:-}" in
  --list) manifest; exit 0 ;;
  --paths)
    shift
    [ $# -gt 0 ] || set -- "${GROUPS_ALL[@]}"
    for g in "$@"; do files_of "$g"; done | while read -r f; do if [ -f "$f" ]; then echo "$f"; fi; done
    exit 0 ;;
  -h|--help) sed -n '2,/^set -e/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
for a in "$@"; do
  case "$a" in
    smollm2|llama-1b|llama-8b) want_groups+=("$a") ;;
    all) want_groups+=("${GROUPS_ALL[@]}") ;;
    *.gguf) want_files+=("$MODELS/$(basename "$a")") ;;
    *) die "unknown argument '$a' (a group: ${GROUPS_ALL[*]}, a file name, --list, --paths)" ;;
  esac
done
[ ${#want_groups[@]} -gt 0 ] || [ ${#want_files[@]} -gt 0 ] || want_groups=("${GROUPS_ALL[@]}")
for g in ${want_groups[@]+"${want_groups[@]}"}; do
  while read -r f; do want_files+=("$f"); done < <(files_of "$g")
done

all_files=()
for g in "${GROUPS_ALL[@]}"; do
  while read -r f; do all_files+=("$f"); done < <(files_of "$g")
done
missing=()
for f in "${want_files[@]}"; do
  known=0
  for k in "${all_files[@]}"; do if [ "$k" = "$f" ]; then known=1; fi; done
  [ $known -eq 1 ] || die "$(basename "$f") is not a file this script makes (see --list)"
  [ -f "$f" ] || missing+=("$f")
done
if [ ${#missing[@]} -eq 0 ]; then
  manifest
  exit 0
fi

# --- tools -------------------------------------------------------------------------------------
mkdir -p "$MODELS"
exec 9>"$MODELS/.make_test_models.lock"
if command -v flock >/dev/null; then
  flock -n 9 || { log "another make_test_models.sh is running; waiting for it"; flock 9; }
fi
# Only llama-quantize is needed here (the vocabulary and gguf-py come with the sources).
LLAMA_TOOLS_TARGETS=${LLAMA_TOOLS_TARGETS:-llama-quantize} ./scripts/build_llama_tools.sh >/dev/null \
  || die "could not build llama.cpp's llama-quantize (see above)"
eval "$(./scripts/build_llama_tools.sh --env)"
QUANTIZE="$LLAMA_TOOLS_BIN/llama-quantize"
[ -x "$QUANTIZE" ] || die "$QUANTIZE is missing"
VOCAB_L3="$LLAMA_VOCAB_DIR/ggml-vocab-llama-bpe.gguf"

# quantize SRC DST TYPE [--allow-requantize]: into DST.tmp, renamed when it succeeded
quantize() {
  local src=$1 dst=$2 type=$3; shift 3
  local t0; t0=$(date +%s)
  log "llama-quantize $* $(basename "$src") -> $(basename "$dst") ($type, $THREADS threads)"
  rm -f "$dst.tmp"
  if ! nice -n 19 "$QUANTIZE" "$@" "$src" "$dst.tmp" "$type" "$THREADS" > "$dst.log" 2>&1; then
    tail -n 15 "$dst.log" >&2
    rm -f "$dst.tmp"
    die "llama-quantize to $type failed (log: $dst.log)"
  fi
  mv "$dst.tmp" "$dst"
  rm -f "$dst.log"
  log "  made $dst ($(du -h --apparent-size "$dst" | cut -f1), $(( $(date +%s) - t0 ))s)"
}

is_missing() { local f; for f in "${missing[@]}"; do [ "$f" = "$1" ] && return 0; done; return 1; }

# write_synthetic PRESET DST: the F16 random-weight model
write_synthetic() {
  local preset=$1 dst=$2
  [ -f "$VOCAB_L3" ] || die "$VOCAB_L3 is missing (the llama.cpp sdist should ship it)"
  log "writing $preset (random weights, F16) -> $dst"
  nice -n 19 $PY scripts/write_synthetic_gguf.py "$dst" --preset "$preset" --type f16 \
      --vocab-gguf "$VOCAB_L3" --gguf-py "$LLAMA_GGUF_PY" \
    || { rm -f "$dst" "$dst.tmp"; die "writing the synthetic $preset model failed"; }
}

# --- SmolLM2 re-quantized ----------------------------------------------------------------------
for t in "${SMOLLM2_TYPES[@]}"; do
  f="$SMOL_PREFIX.$t.gguf"
  is_missing "$f" || continue
  [ -f "$SRC_SMOL" ] || ./scripts/install_deps.sh
  [ -f "$SRC_SMOL" ] || die "$SRC_SMOL is missing (scripts/install_deps.sh installs it)"
  quantize "$SRC_SMOL" "$f" "$t" --allow-requantize
done

# --- synthetic Llama-3.2-1B --------------------------------------------------------------------
need_1b=0
for t in "${LLAMA_1B_TYPES[@]}"; do is_missing "$L1B_PREFIX.$t.gguf" && need_1b=1; done
if [ $need_1b -eq 1 ]; then
  f16="$L1B_PREFIX.F16.gguf"
  keep_f16=0
  for t in "${LLAMA_1B_TYPES[@]}"; do [ "$t" = F16 ] && keep_f16=1; done
  if [ ! -f "$f16" ]; then
    need=$(( 6 * GIB ))
    [ "$(avail_bytes)" -ge $need ] || die "llama-1b needs ~6 GiB free in $MODELS ($(df -h "$MODELS" | awk 'NR==2{print $4}') available)"
    write_synthetic llama-3.2-1b "$f16"
  fi
  for t in "${LLAMA_1B_TYPES[@]}"; do
    [ "$t" = F16 ] && continue
    if is_missing "$L1B_PREFIX.$t.gguf"; then quantize "$f16" "$L1B_PREFIX.$t.gguf" "$t"; fi
  done
  [ $keep_f16 -eq 1 ] || rm -f "$f16"
fi

# --- synthetic Llama-3.1-8B --------------------------------------------------------------------
need_8b=0
for t in "${LLAMA_8B_TYPES[@]}"; do is_missing "$L8B_PREFIX.$t.gguf" && need_8b=1; done
if [ $need_8b -eq 1 ]; then
  f16="$MODELS/.synthetic-Llama-3.1-8B.F16.intermediate.gguf"
  # 15 GiB of F16 plus ~8.5 GiB per output (Q8_0 at most) plus a margin
  need=$(( (16 + 9 * ${#LLAMA_8B_TYPES[@]} + 4) * GIB ))
  [ -f "$f16" ] && need=$(( (9 * ${#LLAMA_8B_TYPES[@]} + 4) * GIB ))
  have=$(avail_bytes)
  if [ "$have" -lt $need ]; then
    log "SKIPPED llama-8b: it needs ~$(( need / GIB )) GiB free in $MODELS, there are" \
        "$(( have / GIB )) GiB (df -h: $(df -h "$MODELS" | awk 'NR==2{print $4}') available)"
  else
    [ -f "$f16" ] || write_synthetic llama-3.1-8b "$f16"
    for t in "${LLAMA_8B_TYPES[@]}"; do
      if is_missing "$L8B_PREFIX.$t.gguf"; then quantize "$f16" "$L8B_PREFIX.$t.gguf" "$t"; fi
    done
    rm -f "$f16"
    log "deleted the 8B F16 intermediate"
  fi
fi

manifest
