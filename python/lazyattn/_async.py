"""AsyncLLM: the engine in this process for asyncio code (docs/python.md, "Async").

No thread per request and no polling: a request submitted here carries the Notifier of its event
loop. The engine's own thread copies every event of the request into the request's mailbox and
names the request on the notifier, whose eventfd the loop watches (loop.add_reader); the loop
then wakes exactly the tasks whose requests have news, and each takes its events without
blocking (Request.try_next). One notifier per (AsyncLLM, event loop), made when the loop's first
request starts and closed when its last one ends, so any number of loops (one per thread, or one
asyncio.run after another) share one engine.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from typing import Any, Deque, Dict, List, Optional, Sequence

from . import _lazyattn
from ._llm import LLM, Chunk, Completion, DocumentInfo, Document, Message, Prompt, _Chunker, _completion, _wants_logprobs


class _LoopWatch:
    """One event loop's notifier: routes the engine's wake-ups to the waiting tasks."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.notifier = _lazyattn.Notifier()
        self.waiters: Dict[int, asyncio.Event] = {}
        loop.add_reader(self.notifier.fd, self._ready)

    def _ready(self) -> None:
        for key in self.notifier.take():
            wake = self.waiters.get(key)
            if wake is not None:
                wake.set()

    def close(self) -> None:
        try:
            self.loop.remove_reader(self.notifier.fd)
        except Exception:  # the loop was closed with a request still registered: nothing to remove
            pass
        self.notifier.close()


class _AsyncRequest:
    """One submitted request and the loop it is read on."""

    def __init__(self, owner: "AsyncLLM", prompt: Prompt, kwargs: Dict[str, Any]) -> None:
        self._owner = owner
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._events: Deque[Any] = collections.deque()
        self.finished = False
        watch = owner._watch(self._loop)
        try:
            self.request = owner.llm._submit(prompt, kwargs, watch.notifier)
        except BaseException:
            owner._unwatch(self._loop)
            raise
        # Events that came before this line wait in the mailbox: the first try_next takes them.
        watch.waiters[self.request.key] = self._wake
        self._watch: Optional[_LoopWatch] = watch

    async def next_event(self) -> Any:
        """The next event (as Request.next() gives them), waiting without blocking the loop."""
        while not self._events:
            # Cleared before looking: an event posted after the look rings and sets it again.
            self._wake.clear()
            ready = self.request.try_next()
            if ready:
                self._events.extend(ready)
                break
            await self._wake.wait()
        event = self._events.popleft()
        if event[0] == "finished":
            self.finished = True
            self.release()
        return event

    def cancel(self) -> None:
        """Stops the request in the engine (if it still runs) and stops listening for it."""
        if not self.finished:
            self.request.cancel()
        self.release()

    def release(self) -> None:
        if self._watch is not None:
            self._watch.waiters.pop(self.request.key, None)
            self._watch = None
            self._owner._unwatch(self._loop)


class AsyncStream:
    """`async for chunk in llm.stream(...)`: the request's text as it is generated (Chunk: a str
    with its token ids and logprobs); `result` holds the whole Completion once the iteration
    ends. Leaving an `async with` block, aclose(), or cancelling the task that iterates cancels
    the request in the engine."""

    def __init__(self, request: _AsyncRequest, logprobs: bool) -> None:
        self._request = request
        self._chunker = _Chunker(logprobs)
        self.result: Optional[Completion] = None

    def __aiter__(self) -> "AsyncStream":
        return self

    async def __anext__(self) -> Chunk:
        try:
            while self.result is None:
                event = await self._request.next_event()
                if event[0] == "token":
                    chunk = self._chunker.token(event)
                    if chunk is not None:
                        return chunk
                else:
                    self.result = _completion(self._request.request.result())
                    last = self._chunker.end()
                    if last is not None:
                        return last
        except BaseException:  # the task was cancelled (or the result raised): stop the request
            self._request.cancel()
            raise
        raise StopAsyncIteration

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        """Cancels the request if it is still running."""
        if self.result is None:
            self._request.cancel()

    async def __aenter__(self) -> "AsyncStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()  # a stream left unfinished (a `break` without aclose) stops its request
        except Exception:  # its loop may be closed already
            pass


class AsyncLLM:
    """The lazyattn engine for asyncio: `await generate(...)`, `await chat(...)`,
    `async for chunk in stream(...)`. The same constructor as LLM (it opens one); or
    AsyncLLM.from_llm(llm) to share an open LLM's engine (and cache) with synchronous code.

    Any number of requests may run at once from any number of tasks (the engine batches them);
    a cancelled task cancels its request. close() cancels what runs: pending generate() calls
    return their Completion with finish_reason "cancelled".
    """

    def __init__(self, model: Optional[str] = None, **kwargs: Any) -> None:
        self._watches: Dict[Any, _LoopWatch] = {}
        self._lock = threading.Lock()  # several loops (threads) may share this AsyncLLM
        self.llm = LLM(model, **kwargs)
        self._owns_llm = True

    @classmethod
    def from_llm(cls, llm: LLM) -> "AsyncLLM":
        """An async face of an open LLM: one engine, one cache. Closing it leaves the LLM open."""
        if not isinstance(llm, LLM):
            raise TypeError(f"llm must be a lazyattn.LLM, got {type(llm).__name__}")
        self = cls.__new__(cls)
        self._watches = {}
        self._lock = threading.Lock()
        self.llm = llm
        self._owns_llm = False
        return self

    # -- generation -------------------------------------------------------------------------

    async def generate(self, prompt: Prompt = None, **kwargs: Any) -> Completion:
        """LLM.generate() without blocking the event loop: the same arguments and result."""
        request = _AsyncRequest(self, prompt, kwargs)
        try:
            while (await request.next_event())[0] != "finished":
                pass
            return _completion(request.request.result())
        except BaseException:  # cancelled while waiting: the engine stops the request
            request.cancel()
            raise

    async def chat(self, messages: Sequence[Message], **kwargs: Any) -> Completion:
        """generate() for a conversation."""
        return await self.generate(list(messages), **kwargs)

    def stream(self, prompt: Prompt = None, **kwargs: Any) -> AsyncStream:
        """The request's text piece by piece: `async for chunk in llm.stream(...)`. Submitted
        at once (call it inside the loop that iterates it)."""
        return AsyncStream(_AsyncRequest(self, prompt, kwargs), _wants_logprobs(kwargs))

    # -- the engine's other calls (quick, or compute-bound: the same as LLM's) -------------

    def precompute(self, documents: Sequence[Document], *, cache_salt: Optional[str] = None) -> List[DocumentInfo]:
        """LLM.precompute (blocks while the documents are computed: run it in an executor
        from a loop that must stay responsive)."""
        return self.llm.precompute(documents, cache_salt=cache_salt)

    def pin(self, documents: Sequence[Document], *, cache_salt: Optional[str] = None) -> List[DocumentInfo]:
        """LLM.pin (blocks as precompute does)."""
        return self.llm.pin(documents, cache_salt=cache_salt)

    def unpin(self, id: str, *, cache_salt: Optional[str] = None) -> None:
        self.llm.unpin(id, cache_salt=cache_salt)

    def documents(self, *, cache_salt: Optional[str] = None) -> List[DocumentInfo]:
        return self.llm.documents(cache_salt=cache_salt)

    def tokenize(self, text: str, *, add_special: bool = False, parse_special: bool = False) -> List[int]:
        return self.llm.tokenize(text, add_special=add_special, parse_special=parse_special)

    def detokenize(self, ids: Sequence[int], *, render_special: bool = False) -> str:
        return self.llm.detokenize(ids, render_special=render_special)

    def info(self) -> Dict[str, Any]:
        return self.llm.info()

    def stats(self) -> Dict[str, Any]:
        return self.llm.stats()

    @property
    def context_length(self) -> int:
        return self.llm.context_length

    @property
    def model(self) -> str:
        return self.llm.model

    # -- lifetime ---------------------------------------------------------------------------

    def close(self) -> None:
        """Cancels running requests and stops the engine (when this AsyncLLM opened it); their
        tasks resume with finish_reason "cancelled" once their loops run again."""
        if self._owns_llm:
            self.llm.close()

    async def __aenter__(self) -> "AsyncLLM":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    def __enter__(self) -> "AsyncLLM":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AsyncLLM(model={self.llm.model!r})"

    # -- one notifier per event loop --------------------------------------------------------

    def _watch(self, loop: asyncio.AbstractEventLoop) -> _LoopWatch:
        with self._lock:
            watch = self._watches.get(loop)
            if watch is None:
                watch = self._watches[loop] = _LoopWatch(loop)
            return watch

    def _unwatch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Closes the loop's notifier once none of its requests is left."""
        with self._lock:
            watch = self._watches.get(loop)
            if watch is not None and not watch.waiters:
                del self._watches[loop]
                watch.close()
