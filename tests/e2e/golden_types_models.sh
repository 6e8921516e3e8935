#!/usr/bin/env bash
# ctest fixture of test_golden_types: the SmolLM2 presets made by llama.cpp's own llama-quantize
# (scripts/make_test_models.sh smollm2, which builds llama-quantize from the llama-cpp-python
# sdist on first use), then a check that they are the very bytes tests/data/golden_types.json was
# made from (SHA-256). Exit 77 (ctest: skipped) only when the sdist cannot be fetched from PyPI;
# any other failure fails the fixture, and with it the tests.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! ./scripts/build_llama_tools.sh --sources >/dev/null; then
  echo "SKIP: llama-cpp-python's sdist could not be fetched from PyPI (no network?);" \
       "the per-type golden tests need llama-quantize from it"
  exit 77
fi
LLAMA_TOOLS_JOBS=${LLAMA_TOOLS_JOBS:-$(nproc)} ./scripts/make_test_models.sh smollm2

python3 - <<'PY'
import hashlib, json, os, sys
doc = json.load(open("tests/data/golden_types.json"))
bad = []
for name, preset in doc["presets"].items():
    path = os.path.join("models", preset["file"])
    with open(path, "rb") as f:
        digest = hashlib.sha256()
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    h = digest.hexdigest()
    if h != preset["sha256"]:
        bad.append(f"{name}: {path} has SHA-256 {h}, the golden file was made from {preset['sha256']}")
if bad:
    print("llama-quantize made other bytes than the golden file's (another llama.cpp version or build?):\n  "
          + "\n  ".join(bad) + "\nregenerate with scripts/make_golden_types.py", file=sys.stderr)
    sys.exit(1)
print(f"{len(doc['presets'])} presets, every file as in tests/data/golden_types.json")
PY
