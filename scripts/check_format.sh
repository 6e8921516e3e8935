#!/usr/bin/env bash
# The tree stays formatted: every tracked C++ and CUDA source as `make format` (clang-format with
# .clang-format) would leave it. Prints the files that differ and fails; `make format` fixes them.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "[format] clang-format not found (scripts/install_deps.sh installs it)" >&2; exit 1; }
bad=()
while IFS= read -r f; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh')
if [ ${#bad[@]} -gt 0 ]; then
  echo "[format] ${#bad[@]} file(s) differ from clang-format's layout (run: make format):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "[format] ok ($(clang-format --version | grep -o 'version [0-9.]*'))"
