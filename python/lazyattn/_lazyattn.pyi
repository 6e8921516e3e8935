"""Type stub of the compiled extension (python/src/lazyattn_ext.cpp). Use the lazyattn package
(LLM, Stream, Completion); this module is its engine."""

from typing import Any, Dict, List, Optional, Tuple, Union

cuda_built: bool

class Error(Exception):
    """An engine failure, with the engine's message (bad arguments raise ValueError/TypeError)."""

def set_log_level(level: str) -> None: ...

# A generated token's logprobs: (its bytes, logprob, [(alternative id, its bytes, logprob), ...]).
RawLogprob = Tuple[bytes, float, List[Tuple[int, bytes, float]]]

class Notifier:
    """One event loop's wake-up: an eventfd the engine's thread writes when a request submitted
    with this notifier has news; take() drains it and returns the requests' keys."""
    def __init__(self) -> None: ...
    @property
    def fd(self) -> int: ...
    def take(self) -> List[int]: ...
    def close(self) -> None: ...

class Request:
    @property
    def id(self) -> int: ...
    @property
    def key(self) -> int:
        """The name its Notifier gives it (0: submitted without one)."""
    @property
    def done(self) -> bool: ...
    def next(self) -> Tuple[Any, ...]:
        """("token", token id, text, RawLogprob or None, calls) or ("finished", finish reason,
        error message); with tools, text is the content outside the calls and calls the
        [(id, name, arguments JSON)] completed now (else []); blocks with the GIL released;
        Ctrl-C cancels the request and raises KeyboardInterrupt."""
    def try_next(self) -> List[Tuple[Any, ...]]:
        """A request submitted with a Notifier: the events ready now (as next() gives them), the
        finishing one last; never blocks."""
    def result(self) -> Dict[str, Any]:
        """Waits for the end: text, token_ids, finish_reason, error, usage (a dict), logprobs
        (a list of RawLogprob, one per token id, or None when not asked), tool_calls ([(id,
        name, arguments JSON)]: a chat with tools; text is then the content outside them)."""
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
    def submit(self, body_json: str, chat: bool, notifier: Optional[Notifier] = None) -> Request:
        """An OpenAI /v1/completions (chat False) or /v1/chat/completions body; with a notifier,
        an async request read with try_next(). Structured output travels in the body's fields
        (response_format, json_schema, grammar, guided_regex, guided_choice); errors about the
        last two name the Python arguments regex and choice."""
    def tokenize(self, text: str, add_special: bool, parse_special: bool) -> List[int]: ...
    def detokenize(self, ids: List[int], render_special: bool) -> str: ...
    def add_documents(self, documents_json: str, cache_salt: str, pin: bool) -> List[Dict[str, Any]]: ...
    def unpin(self, id: str, cache_salt: str) -> None: ...
    def documents(self, cache_salt: str) -> List[Dict[str, Any]]: ...
    def info(self) -> Dict[str, Any]: ...
    def stats(self) -> Dict[str, Any]:
        """The engine's counters, and the compiled-grammar cache's: constraints_compiled,
        constraint_cache_hits, constraints_cached."""
    @property
    def context_length(self) -> int: ...
    def close(self) -> None: ...
