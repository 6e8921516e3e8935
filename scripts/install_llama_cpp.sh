#!/usr/bin/env bash
# Installs the reference/benchmark peer llama-cpp-python (PyPI, built from source) if it is not
# importable yet (idempotent: a no-op when `import llama_cpp` already works at the pinned version).
# Used only by scripts/make_golden.py and bench/peer/llama_cpp_bench.py; lazyattn never links it.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=0.3.36
PY=${PYTHON:-python3}

have=$($PY -c "import llama_cpp; print(llama_cpp.__version__)" 2>/dev/null || true)
if [ "$have" = "$VERSION" ]; then
  echo "[install_llama_cpp] llama-cpp-python $have already installed"
  exit 0
fi
if [ -n "$have" ]; then
  echo "[install_llama_cpp] found llama-cpp-python $have, want $VERSION: reinstalling"
fi

JOBS=$(nproc 2>/dev/null || echo 2)
echo "[install_llama_cpp] pip install llama-cpp-python==$VERSION (source build of llama.cpp," \
     "CPU only, $JOBS jobs): this takes ~15 min on 2 cores, please wait..."
export CMAKE_BUILD_PARALLEL_LEVEL=$JOBS
# Distro Pythons (PEP 668) refuse plain pip installs; decide up front rather than retrying a
# 15-minute build after a failure.
extra=()
if $PY -c 'import sys, sysconfig, os; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["stdlib"], "EXTERNALLY-MANAGED")) and sys.prefix == sys.base_prefix else 1)'; then
  if $PY -m pip install --help 2>/dev/null | grep -q -- --break-system-packages; then
    extra+=(--break-system-packages)
  fi
fi
$PY -m pip install --disable-pip-version-check ${extra[@]+"${extra[@]}"} "llama-cpp-python==$VERSION"

$PY -c "import llama_cpp; print('[install_llama_cpp] ok: llama-cpp-python', llama_cpp.__version__)"
