"""AsyncLLM: generate, chat and stream from asyncio without a thread per request; many requests
at once answering as the synchronous API does; cancellation reaching the engine; close() with
tasks pending; several event loops on one engine; a fork guard."""

import asyncio
import os
import threading
import time

import pytest

import lazyattn

from test_generate import QUESTION, corpus


@pytest.fixture(scope="module")
def allm(llm):
    """The session's engine, async: sync and async answers come from one engine and one cache."""
    return lazyattn.AsyncLLM.from_llm(llm)


def warm(llm, prompt, **kwargs):
    """Runs a prompt once so that the reference taken next reads the cache as the requests it is
    compared with do. A cached prompt's rows are reused (whole blocks, and a block's first rows by
    copy: docs/design.md), and a reused row equals a freshly computed one only to the KV cache's
    rounding, so a greedy pick at a near-tie may differ between a prompt's first run and later ones.
    """
    llm.generate(prompt, max_tokens=1, temperature=0.0, **kwargs)


def wait_for(predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.02)
    return predicate()


def test_generate_chat_and_stream_answer_as_the_sync_api(llm, allm):
    docs = corpus()
    warm(llm, QUESTION, documents=docs)
    want = llm.generate(QUESTION, documents=docs, max_tokens=24)

    async def main():
        out = await allm.generate(QUESTION, documents=docs, max_tokens=24)
        chatted = await allm.chat(QUESTION, documents=docs, max_tokens=24)
        stream = allm.stream(QUESTION, documents=docs, max_tokens=24)
        pieces = [piece async for piece in stream]
        return out, chatted, pieces, stream.result

    out, chatted, pieces, streamed = asyncio.run(main())
    assert isinstance(out, lazyattn.Completion)
    assert (out.text, out.token_ids, out.finish_reason) == (want.text, want.token_ids, want.finish_reason)
    assert (chatted.text, chatted.token_ids) == (want.text, want.token_ids)
    assert len(pieces) > 1 and all(isinstance(p, lazyattn.Chunk) and p for p in pieces)
    assert "".join(pieces) == want.text
    ids = [t for p in pieces for t in p.token_ids]  # a last token without text has no chunk
    assert want.token_ids[: len(ids)] == ids and len(ids) >= len(want.token_ids) - 1
    assert streamed.token_ids == want.token_ids and streamed.usage.completion_tokens == len(want.token_ids)
    assert not allm._watches, "the loop's notifier outlived its requests"


def test_32_concurrent_requests_without_a_thread_each(llm, allm):
    prompts = [f"Question {i}: name a river in France. Answer:" for i in range(32)]
    for p in prompts:
        warm(llm, p)
    want = [llm.generate(p, max_tokens=10, temperature=0.0) for p in prompts]
    threads_before = threading.active_count()
    seen = {}

    async def watch_threads(tasks):
        # While the 32 requests wait, the process runs no more threads than before.
        while not all(t.done() for t in tasks):
            seen["max"] = max(seen.get("max", 0), threading.active_count())
            await asyncio.sleep(0.01)

    async def main():
        tasks = [asyncio.ensure_future(allm.generate(p, max_tokens=10, temperature=0.0)) for p in prompts]
        _, results = await asyncio.gather(watch_threads(tasks), asyncio.gather(*tasks))
        return results

    got = asyncio.run(main())
    assert [c.text for c in got] == [c.text for c in want]
    assert [c.token_ids for c in got] == [c.token_ids for c in want]
    assert seen["max"] == threads_before


def test_cancelling_a_streaming_task_cancels_the_request(llm, allm):
    before = llm.stats()["requests_cancelled"]
    first = {}

    async def reader():
        async for chunk in allm.stream("Count forever: 1, 2, 3,", max_tokens=4000, ignore_eos=True):
            first.setdefault("chunk", chunk)

    async def main():
        task = asyncio.ensure_future(reader())
        while "chunk" not in first:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not allm._watches  # the loop stopped listening with its last request

    asyncio.run(main())
    # Cancelled in the engine, not run to its 4000 tokens.
    assert wait_for(lambda: llm.stats()["requests_cancelled"] == before + 1)
    assert wait_for(lambda: llm.stats()["num_running"] == 0)


def test_cancelling_generate_and_breaking_out_of_a_stream(llm, allm):
    before = llm.stats()["requests_cancelled"]

    async def main():
        task = asyncio.ensure_future(allm.generate("Count forever: 1, 2,", max_tokens=4000, ignore_eos=True))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with allm.stream("Count forever: 1, 2,", max_tokens=4000, ignore_eos=True) as stream:
            async for _ in stream:
                break  # leaving the block cancels it
        return stream

    stream = asyncio.run(main())
    assert stream.result is None
    assert wait_for(lambda: llm.stats()["requests_cancelled"] == before + 2)


def test_logprobs_sync_async_and_streamed(llm, allm):
    docs = corpus(2)
    warm(llm, QUESTION, documents=docs)
    plain = llm.generate(QUESTION, documents=docs, max_tokens=12)
    assert plain.logprobs is None
    out = llm.generate(QUESTION, documents=docs, max_tokens=12, top_logprobs=3)
    assert out.token_ids == plain.token_ids  # asking for logprobs changes nothing else
    assert len(out.logprobs) == len(out.token_ids) > 0
    for token_id, lp in zip(out.token_ids, out.logprobs):
        assert isinstance(lp, lazyattn.TokenLogprob)
        assert lp.token_id == token_id and lp.logprob <= 0.0
        assert lp.token == lp.bytes.decode("utf-8", "replace")
        assert len(lp.top_logprobs) == 3
        alt = [a.logprob for a in lp.top_logprobs]
        assert alt == sorted(alt, reverse=True)
        # Greedy: the token taken is the most likely one, with its own logprob.
        assert lp.top_logprobs[0].token_id == token_id
        assert lp.top_logprobs[0].logprob == pytest.approx(lp.logprob, abs=1e-5)
    # The tokens' bytes are the text (and the end-of-generation token's, when it ended there).
    assert b"".join(lp.bytes for lp in out.logprobs).decode("utf-8", "replace").startswith(out.text)
    flags = llm.generate(QUESTION, documents=docs, max_tokens=12, logprobs=True)
    assert [lp.logprob for lp in flags.logprobs] == pytest.approx([lp.logprob for lp in out.logprobs], abs=1e-5)
    assert all(lp.top_logprobs == [] for lp in flags.logprobs)

    # A completion prompt too (OpenAI's integer `logprobs` there).
    text = llm.generate("The capital of France is", max_tokens=6, top_logprobs=2)
    assert len(text.logprobs) == len(text.token_ids) and all(len(lp.top_logprobs) == 2 for lp in text.logprobs)

    stream = llm.stream(QUESTION, documents=docs, max_tokens=12, top_logprobs=3)
    chunks = list(stream)
    assert [lp for c in chunks for lp in c.logprobs] == stream.result.logprobs
    assert [t for c in chunks for t in c.token_ids] == out.token_ids

    async def main():
        got = await allm.generate(QUESTION, documents=docs, max_tokens=12, top_logprobs=3)
        astream = allm.stream(QUESTION, documents=docs, max_tokens=12, top_logprobs=3)
        achunks = [c async for c in astream]
        return got, achunks, astream.result

    got, achunks, aresult = asyncio.run(main())
    assert [(lp.token_id, lp.token) for lp in got.logprobs] == [(lp.token_id, lp.token) for lp in out.logprobs]
    assert [lp.logprob for lp in got.logprobs] == pytest.approx([lp.logprob for lp in out.logprobs], abs=1e-5)
    assert [lp for c in achunks for lp in c.logprobs] == aresult.logprobs
    assert "".join(achunks) == out.text


def test_token_id_prompts(llm, allm):
    text = "The capital of France is"
    ids = llm.tokenize(text)
    by_text = llm.generate(text, max_tokens=8)
    by_ids = llm.generate(prompt_token_ids=ids, max_tokens=8)
    assert by_ids.token_ids == by_text.token_ids and by_ids.usage.prompt_tokens == len(ids)
    docs = corpus(2)
    with_docs = llm.generate(prompt_token_ids=ids, documents=docs, max_tokens=4)
    assert with_docs.usage.document_tokens > 0
    assert "".join(llm.stream(prompt_token_ids=ids, max_tokens=8)) == by_text.text
    batch = llm.generate_batch([{"prompt_token_ids": ids}, text], max_tokens=8)
    assert batch[0].token_ids == batch[1].token_ids == by_text.token_ids

    async def main():
        return await allm.generate(prompt_token_ids=ids, max_tokens=8)

    assert asyncio.run(main()).token_ids == by_text.token_ids


def test_bad_input_names_the_field(llm, allm):
    vocab = llm.info()["vocab_size"]
    with pytest.raises(ValueError, match=r"prompt_token_ids\[1\] = %d is not in the vocabulary" % vocab):
        llm.generate(prompt_token_ids=[1, vocab])
    with pytest.raises(ValueError, match=r"prompt_token_ids\[0\]"):
        llm.generate(prompt_token_ids=[-1])
    with pytest.raises(ValueError, match="prompt_token_ids must not be empty"):
        llm.generate(prompt_token_ids=[])
    with pytest.raises(TypeError, match=r"prompt_token_ids\[0\] must be an int"):
        llm.generate(prompt_token_ids=["1"])
    with pytest.raises(TypeError, match=r"prompt_token_ids\[0\] must be an int"):
        llm.generate(prompt_token_ids=[True])
    with pytest.raises(TypeError, match="prompt_token_ids must be a list"):
        llm.generate(prompt_token_ids="1 2 3")
    with pytest.raises(TypeError, match="not both"):
        llm.generate("Hi", prompt_token_ids=[1])
    with pytest.raises(TypeError, match="prompt_token_ids"):
        llm.generate()
    with pytest.raises(ValueError, match="top_logprobs"):
        llm.generate("Hi", top_logprobs=21)
    with pytest.raises(ValueError, match="top_logprobs"):
        llm.generate(QUESTION, top_logprobs=-1)
    with pytest.raises(ValueError, match="logprobs"):
        llm.generate("Hi", logprobs=False, top_logprobs=2)
    with pytest.raises(TypeError, match="logprobs"):
        llm.generate("Hi", logprobs="yes")

    async def main():
        with pytest.raises(ValueError, match=r"prompt_token_ids\[0\]"):
            await allm.generate(prompt_token_ids=[vocab + 5])
        with pytest.raises(ValueError, match="max_tokens"):
            await allm.generate(QUESTION, max_tokens=llm.context_length + 1)
        with pytest.raises(ValueError, match="top_logprobs"):
            allm.stream(QUESTION, top_logprobs=99)
        with pytest.raises(TypeError, match="unexpected keyword"):
            await allm.generate(QUESTION, max_token=3)
        assert not allm._watches  # a refused request leaves no notifier behind
        return await allm.generate(QUESTION, max_tokens=2)

    assert asyncio.run(main()).token_ids


def test_two_event_loops_share_one_engine(llm, allm):
    prompts = ["One, two, three,", "Monday, Tuesday,", "Red, green,", "January, February,"]
    want = [llm.generate(p, max_tokens=8).text for p in prompts]
    got = {}
    errors = []
    start = threading.Barrier(2)

    def loop_thread(name, mine):
        try:
            start.wait()
            async def main():
                return await asyncio.gather(*(allm.generate(p, max_tokens=8) for p in mine))

            got[name] = asyncio.run(main())
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [
        threading.Thread(target=loop_thread, args=("a", prompts[:2])),
        threading.Thread(target=loop_thread, args=("b", prompts[2:])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert not errors, errors
    assert [c.text for c in got["a"] + got["b"]] == want


def test_close_with_pending_tasks():
    engine = lazyattn.AsyncLLM(threads=2, max_num_seqs=8)

    async def main():
        tasks = [
            asyncio.ensure_future(engine.generate(f"Count forever from {i}:", max_tokens=4000, ignore_eos=True))
            for i in range(4)
        ]
        stream = engine.stream("Count forever:", max_tokens=4000, ignore_eos=True)
        first = await stream.__anext__()
        engine.close()
        results = await asyncio.wait_for(asyncio.gather(*tasks), 60)
        rest = [c async for c in stream]
        return first, results, rest, stream.result

    first, results, rest, streamed = asyncio.run(main())
    assert first and isinstance(rest, list)
    assert [r.finish_reason for r in results] == ["cancelled"] * 4
    assert streamed.finish_reason == "cancelled"
    assert not engine._watches

    async def after():
        with pytest.raises(lazyattn.Error, match="closed"):
            await engine.generate("Hello", max_tokens=2)

    asyncio.run(after())


def test_fork_after_load_is_refused_in_the_child(allm):
    pid = os.fork()
    if pid == 0:  # the child: no engine thread; it never returns to pytest
        code = 3
        try:
            try:
                asyncio.run(allm.generate("Hello", max_tokens=2))
                code = 4
            except lazyattn.Error as e:
                code = 0 if "fork" in str(e) else 5
        except BaseException:  # noqa: BLE001 - any other outcome is the failure reported
            code = 6
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        pytest.fail("the forked child hung")

    async def parent():
        return await allm.generate("Hello", max_tokens=2)

    assert asyncio.run(parent()).token_ids
