"""Type stub of the compiled extension (python/src/lazyattn_ext.cpp). Use the lazyattn package
(LLM, Stream, Completion); this module is its engine."""

from typing import Any, Dict, List, Tuple, Union

cuda_built: bool

class Error(Exception):
    """An engine failure, with the engine's message (bad arguments raise ValueError/TypeError)."""

def set_log_level(level: str) -> None: ...

class Request:
    @property
    def id(self) -> int: ...
    def next(self) -> Tuple[str, Union[int, str], str]:
        """("token", token id, text) or ("finished", finish reason, error message); blocks with
        the GIL released; Ctrl-C cancels the request and raises KeyboardInterrupt."""
    def result(self) -> Dict[str, Any]:
        """Waits for the end: text, token_ids, finish_reason, error, usage (a dict)."""
    def cancel(self) -> None: ...

class Engine:
    def __init__(
        self,
        model: str,
        cache_mode: str,
        kv_dtype: str,
        kv_store: List[str],
        threads: int,
        kv_cache_mb: int,
        max_num_seqs: int,
        max_model_len: int,
        max_batch_tokens: int,
        device: str,
        document_reuse: str,
        chat_template: str,
    ) -> None: ...
    def submit(self, body_json: str, chat: bool) -> Request:
        """An OpenAI /v1/completions (chat False) or /v1/chat/completions body."""
    def tokenize(self, text: str, add_special: bool, parse_special: bool) -> List[int]: ...
    def detokenize(self, ids: List[int], render_special: bool) -> str: ...
    def add_documents(self, documents_json: str, cache_salt: str, pin: bool) -> List[Dict[str, Any]]: ...
    def unpin(self, id: str, cache_salt: str) -> None: ...
    def documents(self, cache_salt: str) -> List[Dict[str, Any]]: ...
    def info(self) -> Dict[str, Any]: ...
    def stats(self) -> Dict[str, Any]: ...
    @property
    def context_length(self) -> int: ...
    def close(self) -> None: ...
