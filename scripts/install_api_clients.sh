#!/usr/bin/env bash
# Installs the official API clients the server's client tests drive against `lazyattn serve`
# (Anthropic's `anthropic` SDK: tests/server/test_anthropic_client.py) into the ignored virtual
# environment .venv-api-clients/, from wheels cached in the ignored .whl-api/ (downloaded from
# PyPI once; a second install on the same machine downloads nothing). Never needed by the engine
# or `make run`.
#
#   scripts/install_api_clients.sh            install (if needed); print the environment's python
#   scripts/install_api_clients.sh --python   print the environment's python and exit 0 if it is
#                                             installed (1 if not), installing nothing
#
# Idempotent; exit 77 (CTest: skipped) when PyPI cannot be reached and the wheel cache cannot
# satisfy the pins (scripts/pinned_venv.sh does the installing).
# Environment: API_CLIENTS_VENV (default .venv-api-clients), API_CLIENTS_WHEELS (default
# .whl-api), PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${API_CLIENTS_VENV:-$ROOT/.venv-api-clients}
WHEELS=${API_CLIENTS_WHEELS:-$ROOT/.whl-api}
PY=${PYTHON:-python3}
TOOL=install_api_clients


# The clients, pinned: what the tests exercise.
REQUIREMENTS='anthropic==2.17.0'
# Their dependencies, as pip resolved the pins above on CPython 3.11 (a constraint: a Python that
# needs a package more gets it at the newest version).
CONSTRAINTS='annotated-types==0.8.0
anyio==4.16.0
docstring-parser==0.18.0
h11==0.16.0
httpcore2==2.17.0
httpx2==2.17.0
idna==3.21
jiter==0.19.0
opentelemetry-api==1.45.3
pydantic==2.14.4
pydantic-core==2.50.5
sniffio==1.3.1
truststore==0.10.5
typing-inspection==0.4.5
typing-extensions==4.16.0'

# Proof that it works: every client imports, at the pinned version.
IMPORT_CHECK=$(cat <<'PY'
from importlib.metadata import version
import anthropic
print("[install_api_clients] ok: anthropic %s" % version("anthropic"))
PY
)
PROBE=anthropic
# shellcheck source=scripts/pinned_venv.sh
source "$ROOT/scripts/pinned_venv.sh"
pinned_venv_main "$@"
