#!/usr/bin/env bash
# Installs only what the server tests (tests/server) need beyond the build: curl, and the official
# `openai` Python client. Idempotent; scripts/install_deps.sh installs the same as part of
# everything.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v curl >/dev/null 2>&1; then
  echo "[install_server_test_deps] apt-get install curl"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y --no-install-recommends curl >/dev/null 2>&1 || {
    $SUDO apt-get update >/dev/null
    $SUDO apt-get install -y --no-install-recommends curl
  }
fi

PY=${PYTHON:-python3}
if ! $PY -c "import openai" 2>/dev/null; then
  echo "[install_server_test_deps] pip install openai"
  $PY -m pip install -q --disable-pip-version-check openai 2>/dev/null \
    || $PY -m pip install -q --disable-pip-version-check --break-system-packages openai
fi
echo "[install_server_test_deps] ok (curl, openai $($PY -c 'import openai; print(openai.__version__)'))"
