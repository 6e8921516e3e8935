"""docs/python.md's examples run: the async RAG service (tests/python/example_async_rag.py), the
cited JSON answer (tests/python/example_cited_json.py) and the tool-calling RAG loop
(tests/python/example_tool_rag.py); the doc holds each file's code verbatim."""

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


def test_cited_json_example_runs(capsys):
    import example_cited_json

    replies = example_cited_json.main()
    assert len(replies) == 2
    for reply in replies:
        assert set(reply) == {"answer", "citations"}
        assert 1 <= len(reply["answer"]) <= 120
        assert all(0 <= i < len(example_cited_json.PASSAGES) for i in reply["citations"])
    assert "Which rivers meet in Lyon? ->" in capsys.readouterr().out


def test_tool_rag_example_runs(capsys):
    import example_tool_rag

    first, second = example_tool_rag.main()
    for out in (first, second):
        assert out.finish_reason in ("stop", "length") and out.text and not out.tool_calls
        assert out.usage.document_tokens > 0  # the passages came back as documents
    # The first question computed its passages; the second found (some of) the same ones cached.
    assert first.usage.segments_missed >= 3
    assert second.usage.segments_hit >= 1
    out = capsys.readouterr().out
    assert "Which rivers meet in Lyon? -> search(" in out and "document hits" in out


def test_doc_holds_the_examples_verbatim():
    """Each example file's code between its markers is a code block of docs/python.md."""
    import pathlib

    here = pathlib.Path(__file__).resolve().parent
    # In the checkout (tests/python) or in scripts/test_python_package.sh's copy (tests, docs beside).
    docs = [d / "docs" / "python.md" for d in here.parents if (d / "docs" / "python.md").is_file()]
    assert docs, "docs/python.md not found above " + str(here)
    text = docs[0].read_text()
    for name in ("example_async_rag.py", "example_cited_json.py", "example_tool_rag.py"):
        source = (here / name).read_text()
        begin = source.index("\n", source.index("# --- docs/python.md:")) + 1
        code = source[begin : source.index("# --- end of the example ---")]
        assert "```python\n" + code + "```" in text, f"docs/python.md does not hold {name}'s example verbatim"
