#!/usr/bin/env bash
# Installs the RAG frameworks tests/server/test_rag_frameworks.py drives against `lazyattn serve`
# (the openai client, LangChain, LlamaIndex, Haystack) into the ignored virtual environment
# .venv-rag-clients/, from wheels cached in the ignored .whl-rag/ (downloaded from PyPI once; a
# second install on the same machine downloads nothing). Never needed by the engine or `make run`.
#
#   scripts/install_rag_clients.sh            install (if needed); print the environment's python
#   scripts/install_rag_clients.sh --python   print the environment's python and exit 0 if it is
#                                             installed (1 if not), installing nothing
#
# Idempotent; exit 77 (CTest: skipped) when PyPI cannot be reached and the wheel cache cannot
# satisfy the pins (scripts/pinned_venv.sh does the installing).
# Environment: RAG_CLIENTS_VENV (default .venv-rag-clients), RAG_CLIENTS_WHEELS (default
# .whl-rag), PYTHON.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV=${RAG_CLIENTS_VENV:-$ROOT/.venv-rag-clients}
WHEELS=${RAG_CLIENTS_WHEELS:-$ROOT/.whl-rag}
PY=${PYTHON:-python3}
TOOL=install_rag_clients


# The frameworks, pinned: what the test exercises.
REQUIREMENTS='openai==2.54.0
langchain-core==1.8.3
langchain-classic==1.0.8
langchain-openai==1.8.1
llama-index-core==0.14.25
llama-index-llms-openai-like==0.8.1
haystack-ai==3.4.1'
# Their dependencies, as pip resolved the pins above on CPython 3.11 (a constraint: a Python that
# needs a package more, e.g. async-timeout below 3.11, gets it at the newest version).
CONSTRAINTS='aiohappyeyeballs==2.7.1
aiohttp==3.14.5
aiosignal==1.4.0
aiosqlite==0.22.1
annotated-types==0.8.0
anyio==4.16.0
attrs==26.1.0
backoff==2.2.1
banks==2.5.1
certifi==2026.10.19.post1
charset-normalizer==3.5.3
click==8.5.1
cloudpickle==3.1.3
colorama==0.4.6
dataclasses-json==0.6.7
defusedxml==0.7.1
deprecated==1.3.1
dirtyjson==1.0.8
distro==1.9.0
docstring-parser==0.18.0
filetype==1.2.0
frozenlist==1.8.0
fsspec==2026.9.0
greenlet==3.5.6
griffe==2.4.1
griffecli==2.4.1
griffelib==2.4.1
h11==0.16.0
httpcore==1.0.9
httpcore2==2.16.2
httpx==0.29.0
httpx2==2.16.2
idna==3.20
jinja2==3.1.6
jiter==0.19.0
joblib==1.6.0
jsonpatch==1.48
jsonpointer==3.12
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
langchain-protocol==0.0.20
langchain-text-splitters==1.1.3
langsmith==0.15.1
lazy-imports==1.2.0
llama-index-instrumentation==0.6.0
llama-index-llms-openai==0.8.3
llama-index-workflows==2.26.1
markupsafe==3.0.4
marshmallow==3.26.2
more-itertools==11.2.1
multidict==7.2.1
mypy-extensions==1.2.0
nest-asyncio==1.6.0
networkx==3.6.1
nltk==3.10.4
numpy==2.4.6
orjson==3.13.0
packaging==26.4
pillow==13.0.0
platformdirs==4.14.9
posthog==7.91.1
propcache==0.5.4
pydantic==2.14.4
pydantic-core==2.50.5
python-dateutil==4.0.0
pyyaml==6.0.4
referencing==0.37.0
regex==2026.11.19
requests==2.34.2
requests-toolbelt==1.0.0
rpds-py==2026.9.1
setuptools==84.2.1
sniffio==1.3.1
sqlalchemy==2.1.9
tenacity==9.2.1
tiktoken==0.14.0
tinytag==2.3.2
tqdm==4.70.1
truststore==0.10.5
typing-extensions==4.16.0
typing-inspect==0.9.0
typing-inspection==0.4.5
tzdata==2026.6
urllib3==2.8.0
uuid-utils==0.19.0
websockets==17.4
wrapt==2.5.2
xxhash==4.1.0
yarl==1.25.1
zstandard==0.25.0'

# Proof that it works: every framework the test uses imports, at the pinned version.
IMPORT_CHECK=$(cat <<'PY'
from importlib.metadata import version
import openai
import langchain_core
from langchain_classic.chains.combine_documents import create_stuff_documents_chain
from langchain_openai import ChatOpenAI
from llama_index.core import VectorStoreIndex
from llama_index.llms.openai_like import OpenAILike
from haystack.components.builders import ChatPromptBuilder
from haystack.components.generators.chat import OpenAIChatGenerator
names = ["openai", "langchain-core", "langchain-classic", "langchain-openai", "llama-index-core",
         "llama-index-llms-openai-like", "haystack-ai"]
print("[install_rag_clients] ok: " + ", ".join("%s %s" % (n, version(n)) for n in names))
PY
)
PROBE=openai
export HAYSTACK_TELEMETRY_ENABLED=False
# shellcheck source=scripts/pinned_venv.sh
source "$ROOT/scripts/pinned_venv.sh"
pinned_venv_main "$@"
