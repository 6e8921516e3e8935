"""lazyattn: a RAG inference engine with position-agnostic document KV caching, in process.

    import lazyattn
    llm = lazyattn.LLM()  # the embedded SmolLM2-135M-Instruct
    out = llm.generate([{"role": "user", "content": "Who wrote it?"}], documents=["...", "..."])
    print(out.text, out.usage.cached_tokens)

The API reference is docs/python.md.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from ._lazyattn import Error
from ._async import AsyncLLM, AsyncStream
from ._llm import LLM, Chunk, Completion, DocumentInfo, Stream, TokenLogprob, ToolCall, TopLogprob, Usage
from ._model import default_model_path

try:
    __version__ = version("lazyattn")
except PackageNotFoundError:  # imported from a source tree
    __version__ = "0.0.0"

__all__ = [
    "LLM",
    "AsyncLLM",
    "AsyncStream",
    "Chunk",
    "Completion",
    "DocumentInfo",
    "Error",
    "Stream",
    "TokenLogprob",
    "ToolCall",
    "TopLogprob",
    "Usage",
    "default_model_path",
    "__version__",
]
