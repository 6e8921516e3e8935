"""docs/python.md's async RAG example runs (tests/python/example_async_rag.py holds it)."""

import asyncio

import example_async_rag


def test_async_rag_example_runs(capsys):
    results = asyncio.run(example_async_rag.main())
    assert len(results) == 4
    assert all(r.finish_reason in ("stop", "length") and r.text for r in results)
    streamed = results[-1]
    assert streamed.logprobs is not None and len(streamed.logprobs) == len(streamed.token_ids)
    assert all(len(lp.top_logprobs) == 2 for lp in streamed.logprobs)
    out = capsys.readouterr().out
    assert "Which rivers meet in Lyon? ->" in out
