"""Generation through the Python API with the embedded model: documents, reuse, streaming,
batches, threads, Ctrl-C, and bad arguments."""

import _thread
import signal
import threading
import time
import uuid

import pytest

import lazyattn

QUESTION = [{"role": "user", "content": "Which river runs through the city of Lyon? Answer in one sentence."}]


def corpus(n=3):
    """Documents nobody has cached yet (a fresh tag in each)."""
    tag = uuid.uuid4().hex[:8]
    facts = [
        "Lyon is a city in France where the Rhone and the Saone rivers meet.",
        "The Rhone flows from the Swiss Alps through Lyon to the Mediterranean Sea.",
        "Paris lies on the Seine, far to the north of Lyon.",
        "The Loire is the longest river entirely in France.",
    ]
    return [f"[{tag}-{i}] {facts[i % len(facts)]}" for i in range(n)]


def test_embedded_model_is_the_default(llm):
    assert lazyattn.default_model_path() is not None
    assert llm.model == lazyattn.default_model_path()
    info = llm.info()
    assert info["architecture"] == "llama"
    assert info["context_length"] > 0 and info["vocab_size"] > 0
    assert info["cpu_isa"] in ("scalar", "avx2", "avx512")


def test_generate_with_documents(llm):
    docs = corpus()
    out = llm.generate(QUESTION, documents=docs, max_tokens=24)
    assert isinstance(out, lazyattn.Completion)
    assert out.finish_reason in ("stop", "length")
    assert out.text and len(out.token_ids) == out.usage.completion_tokens
    assert out.usage.document_tokens > 0
    assert out.usage.prompt_tokens > out.usage.document_tokens
    assert out.usage.ttft_ms > 0
    assert out.usage.cached_tokens < out.usage.document_tokens  # fresh documents: computed here


def test_completion_prompt(llm):
    out = llm.generate("The capital of France is", max_tokens=8)
    assert out.usage.prompt_tokens == len(llm.tokenize("The capital of France is"))
    assert 1 <= len(out.token_ids) <= 8


def test_reordered_documents_are_reused(llm):
    docs = corpus(4)
    first = llm.generate(QUESTION, documents=docs, max_tokens=4)
    second = llm.generate(QUESTION, documents=list(reversed(docs)), max_tokens=4)
    assert first.usage.document_tokens == second.usage.document_tokens
    # Every document was computed by the first request and is read at its new position (the
    # chat preamble before them is a cached segment too).
    assert first.usage.segments_missed == 4
    assert second.usage.segments_missed == 0 and second.usage.segments_hit >= 4
    assert second.usage.cached_tokens >= second.usage.document_tokens
    assert second.usage.computed_tokens < first.usage.computed_tokens


def test_stream_yields_the_same_text(llm):
    docs = corpus()
    # The prompt once first, so the reference reads the cache as the stream does: a cached
    # prompt's rows are reused (a block's first rows by copy), equal to fresh ones only to the KV
    # cache's rounding, and these fresh documents make a greedy near-tie possible in any run
    # (test_async.py's warm()).
    llm.generate(QUESTION, documents=docs, max_tokens=1)
    whole = llm.generate(QUESTION, documents=docs, max_tokens=32)
    stream = llm.stream(QUESTION, documents=docs, max_tokens=32)
    pieces = list(stream)
    assert len(pieces) > 1
    assert "".join(pieces) == whole.text
    assert stream.result is not None
    assert stream.result.text == whole.text
    assert stream.result.token_ids == whole.token_ids


def test_batch_runs_in_order(llm):
    prompts = ["One, two, three,", "Monday, Tuesday,", "Red, green,"]
    batch = llm.generate_batch(prompts, max_tokens=6)
    assert [len(c.token_ids) > 0 for c in batch] == [True] * 3
    for prompt, c in zip(prompts, batch):
        assert c.usage.prompt_tokens == len(llm.tokenize(prompt))


def test_eight_threads_at_once(llm):
    docs = corpus()
    results = [None] * 8
    errors = []
    start = threading.Barrier(8)

    def work(i):
        try:
            start.wait()
            q = [{"role": "user", "content": f"Question {i}: which river runs through Lyon?"}]
            results[i] = llm.generate(q, documents=docs, max_tokens=12)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a submitting thread never returned (deadlock)"
    assert not errors, errors
    assert all(r is not None and r.finish_reason in ("stop", "length") and r.token_ids for r in results)


def test_ctrl_c_cancels_the_request(llm):
    before = llm.stats()["requests_cancelled"]
    # interrupt_main() is a no-op where SIGINT is ignored, as it is for a job a non-interactive
    # shell starts in the background: give SIGINT Python's own handler for this test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.5, _thread.interrupt_main)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            llm.generate("Count forever: 1, 2, 3,", max_tokens=4000, ignore_eos=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    # Cancelled in the engine, not run to its 4000 tokens (that would finish "length").
    deadline = time.monotonic() + 10
    while llm.stats()["requests_cancelled"] == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert llm.stats()["requests_cancelled"] == before + 1
    assert llm.generate("Hello", max_tokens=2).token_ids


def test_precompute_pin_and_tokenize(llm):
    docs = corpus(2)
    added = llm.precompute(docs)
    assert [d.pinned for d in added] == [False, False] and all(d.tokens > 0 for d in added)
    out = llm.generate(QUESTION, documents=docs, max_tokens=2)
    assert out.usage.segments_missed == 0 and out.usage.cached_tokens >= out.usage.document_tokens
    pinned = llm.pin(docs[:1])
    assert pinned[0].pinned and pinned[0].id == added[0].id
    assert any(d.id == pinned[0].id and d.pinned for d in llm.documents())
    llm.unpin(pinned[0].id)
    # A document twice in one batch: each reply says what the document holds after the call.
    twice = llm.precompute([docs[1], docs[1]])
    assert [(d.pinned, d.pin_count) for d in twice] == [(False, 0), (False, 0)]
    # All or none: a document past the context refuses the batch and leaves the first unpinned.
    with pytest.raises(ValueError, match=r"documents\[1\]"):
        llm.pin([docs[0], "word " * (4 * llm.context_length)])
    assert not any(d.id == added[0].id and d.pinned for d in llm.documents())
    ids = llm.tokenize("Hello world")
    assert llm.detokenize(ids) == "Hello world"


def test_bad_arguments_name_the_field_and_the_llm_still_works(llm):
    with pytest.raises(ValueError, match="model"):
        lazyattn.LLM("/nonexistent/model.gguf")
    with pytest.raises(TypeError, match=r"documents\[1\]"):
        llm.generate(QUESTION, documents=["a passage", 42])
    with pytest.raises(TypeError, match="documents"):
        llm.generate(QUESTION, documents="a single string")
    with pytest.raises(ValueError, match="document_reuse"):
        llm.generate(QUESTION, documents=corpus(1), document_reuse="anchor+sideways=3")
    with pytest.raises(ValueError, match="max_tokens"):
        llm.generate(QUESTION, max_tokens=llm.context_length + 1)
    with pytest.raises(ValueError, match="max_tokens"):
        llm.generate(QUESTION, max_tokens=-1)
    with pytest.raises(TypeError, match="temperature"):
        llm.generate(QUESTION, temperature="hot")
    with pytest.raises(ValueError, match="temperature"):
        llm.generate(QUESTION, temperature=7.0)
    with pytest.raises(TypeError, match="prompt"):
        llm.generate(12)
    with pytest.raises(ValueError, match="messages"):
        llm.generate([{"role": "user"}])
    with pytest.raises(TypeError, match="unexpected keyword"):
        llm.generate(QUESTION, max_token=3)
    with pytest.raises(ValueError, match="kv_dtype"):
        lazyattn.LLM(kv_dtype="f12")
    with pytest.raises(ValueError, match="id"):
        llm.unpin("0" * 32)
    out = llm.generate(QUESTION, documents=corpus(2), max_tokens=4)
    assert out.finish_reason in ("stop", "length") and out.token_ids
