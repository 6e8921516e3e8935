#!/usr/bin/env bash
# Installs the fine-tuning recipe's Python environment (PyTorch, transformers, PEFT, gguf) into
# the ignored virtual environment .venv-finetune/, from wheels cached in the ignored .whl/
# (downloaded from PyPI once; a second install on the same machine downloads nothing).
# Never needed by `make run` or the engine; used by `make finetune` and the torch oracle test.
#
#   scripts/finetune/install.sh                 CPU (default): torch without its CUDA packages
#   scripts/finetune/install.sh --device cuda   GPU host: torch with its CUDA packages from PyPI
#   scripts/finetune/install.sh --python        print the environment's python and exit 0 if
#                                               it is installed (1 if not), installing nothing
#
# Idempotent: a stamp holding the requirements' hash marks a finished install.
# Environment: FINETUNE_VENV (default .venv-finetune), FINETUNE_WHEELS (default .whl), PYTHON.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
VENV=${FINETUNE_VENV:-$ROOT/.venv-finetune}
WHEELS=${FINETUNE_WHEELS:-$ROOT/.whl}
REQ=$ROOT/scripts/finetune/requirements-cpu.txt
PY=${PYTHON:-python3}
DEVICE=cpu

log() { echo "[finetune/install] $*" >&2; }
die() { echo "[finetune/install] ERROR: $*" >&2; exit 1; }

case "${1:-}" in
  --python) [ -f "$VENV/.installed" ] || exit 1; echo "$VENV/bin/python"; exit 0 ;;
  --device) DEVICE=${2:?--device needs cpu or cuda} ;;
  "") ;;
  -h|--help) sed -n '2,/^set -e/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) die "unknown argument '$1'" ;;
esac
case "$DEVICE" in cpu|cuda) ;; *) die "--device must be cpu or cuda, not '$DEVICE'" ;; esac

want="$(cat "$REQ" "$ROOT/scripts/finetune/install.sh" "$ROOT/scripts/finetune/torch_cpu_stubs.py" | sha256sum | cut -c1-16)-$DEVICE"
if [ -f "$VENV/.installed" ] && [ "$(cat "$VENV/.installed")" = "$want" ]; then
  log "already installed in $VENV"
  echo "$VENV/bin/python"
  exit 0
fi

mkdir -p "$WHEELS"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$WHEELS/.lock"
  flock 9
  if [ -f "$VENV/.installed" ] && [ "$(cat "$VENV/.installed")" = "$want" ]; then
    echo "$VENV/bin/python"; exit 0
  fi
fi

start=$(date +%s)
rm -rf "$VENV.tmp"
$PY -m venv "$VENV.tmp" || die "could not create a virtual environment with $PY (apt-get install python3-venv)"
VPY="$VENV.tmp/bin/python"
pipq() { "$VPY" -m pip --disable-pip-version-check -q "$@"; }

# Wheels: what the cache lacks is downloaded from PyPI (torch is ~530 MB, the rest ~60 MB).
log "wheels in $WHEELS (downloading what is missing from PyPI)"
pipq download --no-deps -d "$WHEELS" -r "$REQ" || die "pip download failed (is PyPI reachable?)"
pipq install --no-index --find-links "$WHEELS" --no-deps -r "$REQ" || die "pip install failed"
SITE=$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

if [ "$DEVICE" = cuda ]; then
  log "GPU host: installing torch's CUDA packages from PyPI"
  pipq install "torch==$(sed -n 's/^torch==//p' "$REQ")" || die "pip install torch (CUDA) failed"
else
  command -v cc >/dev/null 2>&1 || die "a C compiler (cc) is needed for the CPU stand-ins of CUDA's libraries"
  "$VPY" "$ROOT/scripts/finetune/torch_cpu_stubs.py" "$SITE/torch/lib" >&2
fi

# Proof that it works: import, a matmul with its backward, the packages the recipe imports.
"$VPY" - <<'PY' >&2 || die "the installed torch does not run"
import torch, transformers, peft, gguf, safetensors
a = torch.randn(32, 48, requires_grad=True)
(a @ a.T).square().sum().backward()
assert a.grad is not None and torch.isfinite(a.grad).all()
print("[finetune/install] ok: torch %s (cuda available: %s), transformers %s, peft %s"
      % (torch.__version__, torch.cuda.is_available(), transformers.__version__, peft.__version__))
PY
echo "$want" > "$VENV.tmp/.installed"
rm -rf "$VENV"
mv "$VENV.tmp" "$VENV"
# The venv's scripts name their interpreter by the temporary path; point them at the final one.
sed -i "1s|$VENV.tmp/bin/|$VENV/bin/|" "$VENV"/bin/* 2>/dev/null || true
sed -i "s|$VENV.tmp|$VENV|g" "$VENV/bin/activate" "$VENV/pyvenv.cfg" 2>/dev/null || true
log "installed in $VENV in $(( $(date +%s) - start )) s"
echo "$VENV/bin/python"
