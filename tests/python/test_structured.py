"""Structured output through the Python API (docs/python.md "Structured output"): response_format=,
json_schema=, grammar=, regex= and choice= on generate/chat/stream/generate_batch and AsyncLLM's
twins, compiled by the server's own constraint compiler (errors naming the argument, the compiled
cache), with documents and reuse settings unchanged."""

import asyncio
import json
import re
import uuid

import pytest

import lazyattn

CITY = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 20},
        "country": {"enum": ["France", "Italy", "Spain"]},
        "rivers": {"type": "array", "items": {"type": "string", "maxLength": 12}, "minItems": 1, "maxItems": 2},
    },
    "required": ["city", "country", "rivers"],
    "additionalProperties": False,
}
QUESTION = [{"role": "user", "content": "Which rivers meet in Lyon? Answer as JSON."}]


def check_city(text):
    """The output is a JSON document valid against CITY (checked by hand: the test environment
    has no jsonschema)."""
    doc = json.loads(text)
    assert set(doc) == {"city", "country", "rivers"}, doc
    assert isinstance(doc["city"], str) and len(doc["city"]) <= 20
    assert doc["country"] in ("France", "Italy", "Spain")
    assert isinstance(doc["rivers"], list) and 1 <= len(doc["rivers"]) <= 2
    assert all(isinstance(r, str) and len(r) <= 12 for r in doc["rivers"])
    return doc


def fresh_docs():
    tag = uuid.uuid4().hex[:8]
    return [
        f"[{tag}] Lyon is a city in France where the Rhone and the Saone rivers meet.",
        f"[{tag}] The Rhone flows from the Swiss Alps through Lyon to the Mediterranean Sea.",
    ]


def test_json_schema_output_validates(llm):
    out = llm.chat(QUESTION, json_schema=CITY, max_tokens=96)
    assert out.finish_reason == "stop", out.text
    check_city(out.text)
    # Unconstrained, the same question is prose: the constraint made the difference.
    free = llm.chat(QUESTION, max_tokens=96)
    with pytest.raises(ValueError):
        check_city(free.text)


def test_every_spelling_constrains(llm):
    rf = {"type": "json_schema", "json_schema": {"name": "city", "schema": CITY, "strict": True}}
    out = llm.chat(QUESTION, response_format=rf, max_tokens=96)
    assert out.finish_reason == "stop"
    check_city(out.text)
    assert llm.chat(QUESTION, json_schema=json.dumps(CITY), max_tokens=96).text == out.text  # JSON text, same schema

    obj = llm.chat(QUESTION, response_format={"type": "json_object"}, max_tokens=96)
    assert obj.finish_reason == "stop"
    assert isinstance(json.loads(obj.text), dict)

    yes_no = llm.generate("Is Lyon in France? Answer:", grammar='root ::= " yes" | " no"', max_tokens=8)
    assert yes_no.text in (" yes", " no") and yes_no.finish_reason == "stop"

    code = llm.generate("The postal code of Lyon is", regex=r" [0-9]{5}", max_tokens=12)
    assert re.fullmatch(r" [0-9]{5}", code.text), code.text

    river = llm.chat(QUESTION, choice=["Rhone", "Seine", "Loire"], max_tokens=8)
    assert river.text in ("Rhone", "Seine", "Loire") and river.finish_reason == "stop"


def test_stream_and_batch_under_a_constraint(llm):
    whole = llm.chat(QUESTION, json_schema=CITY, max_tokens=96)
    with llm.stream(QUESTION, json_schema=CITY, max_tokens=96) as stream:
        pieces = list(stream)
    assert "".join(pieces) == whole.text
    assert stream.result.finish_reason == "stop"
    batch = llm.generate_batch(
        [{"prompt": QUESTION, "json_schema": CITY}, {"prompt": "Is Lyon in France? Answer:", "choice": [" yes", " no"]}],
        max_tokens=96,
    )
    assert batch[0].text == whole.text
    assert batch[1].text in (" yes", " no")


def test_documents_and_reuse_under_a_constraint(llm):
    docs = fresh_docs()
    first = llm.chat(QUESTION, documents=docs, json_schema=CITY, max_tokens=96)
    check_city(first.text)
    assert first.usage.document_tokens > 0 and first.usage.cached_tokens < first.usage.document_tokens
    # Reordered documents are read from the cache, constraint or not.
    again = llm.chat(QUESTION, documents=docs[::-1], json_schema=CITY, max_tokens=96,
                     document_reuse="anchor+recompute=4")
    check_city(again.text)
    assert again.usage.cached_tokens > 0
    assert again.usage.recomputed_tokens > 0


def test_unmet_constraint_ends_with_length(llm):
    # Three tokens cannot finish the object: the output is cut, and said to be cut.
    out = llm.chat(QUESTION, json_schema=CITY, max_tokens=3)
    assert out.finish_reason == "length"
    assert len(out.token_ids) == 3
    with pytest.raises(ValueError):
        json.loads(out.text)


def test_compiled_grammars_are_cached(llm):
    schema = dict(CITY, title=f"t{uuid.uuid4().hex}")  # a text nobody compiled yet
    before = llm.stats()
    llm.chat(QUESTION, json_schema=schema, max_tokens=2)
    mid = llm.stats()
    assert mid["constraints_compiled"] == before["constraints_compiled"] + 1
    llm.chat(QUESTION, json_schema=schema, max_tokens=2)
    llm.chat(QUESTION, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
             max_tokens=2)
    after = llm.stats()
    assert after["constraints_compiled"] == mid["constraints_compiled"]  # the same text: compiled once
    assert after["constraint_cache_hits"] == mid["constraint_cache_hits"] + 2
    assert after["constraints_cached"] >= 1


def test_bad_constraints_name_the_argument(llm):
    cases = [
        (dict(json_schema={"type": "object", "properties": {"a": {"type": "no-such-type"}}}), r"^'json_schema' is not a valid json_schema: "),
        (dict(json_schema="{not json"), "^'json_schema' is not a JSON schema"),
        (dict(grammar="root ::= missing_rule"), "^'grammar' is not a valid grammar: "),
        (dict(regex="[a-z"), "^'regex' is not a valid regex"),
        (dict(choice=[]), "^'choice' is not a valid choice.*at least one"),
        (dict(response_format={"type": "xml"}), r"response_format\.type"),
        (dict(response_format={"type": "json_schema"}), r"response_format\.schema"),
        (dict(grammar="root ::= " + "(" * 200 + '"a"' + ")" * 200), "^'grammar' .*nests 200 levels deep"),
        (dict(json_schema={"type": "string", "description": "x" * 70000}), "^'json_schema' .*bytes; the server accepts at most"),
        (dict(json_schema=CITY, grammar='root ::= "a"'), "grammar and json_schema both constrain the output"),
    ]
    for kwargs, pattern in cases:
        with pytest.raises(ValueError, match=pattern):
            llm.chat(QUESTION, max_tokens=4, **kwargs)
    for kwargs, name in [
        (dict(json_schema=5), "json_schema"),
        (dict(grammar=["root"]), "grammar"),
        (dict(regex=3), "regex"),
        (dict(choice="yes"), "choice"),
        (dict(choice=["yes", 2]), r"choice\[1\]"),
        (dict(response_format="json_object"), "response_format"),
    ]:
        with pytest.raises(TypeError, match=name):
            llm.chat(QUESTION, max_tokens=4, **kwargs)
    # Nothing above reached the engine's state: the next request answers as ever.
    check_city(llm.chat(QUESTION, json_schema=CITY, max_tokens=96).text)


def test_async_twins(llm):
    sync = llm.chat(QUESTION, json_schema=CITY, max_tokens=96)
    yes_no = llm.generate("Is Lyon in France? Answer:", choice=[" yes", " no"], max_tokens=4)

    async def main():
        allm = lazyattn.AsyncLLM.from_llm(llm)
        chat = await allm.chat(QUESTION, json_schema=CITY, max_tokens=96)
        gen, picked = await asyncio.gather(
            allm.generate(QUESTION, response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": CITY}},
                          max_tokens=96),
            allm.generate("Is Lyon in France? Answer:", choice=[" yes", " no"], max_tokens=4),
        )
        pieces = [str(c) async for c in allm.stream(QUESTION, json_schema=CITY, max_tokens=96)]
        with pytest.raises(ValueError, match="^'regex' is not a valid regex"):
            await allm.generate("x", regex="(", max_tokens=2)
        return chat, gen, picked, "".join(pieces)

    chat, gen, picked, streamed = asyncio.run(main())
    assert chat.text == gen.text == streamed == sync.text
    check_city(chat.text)
    assert picked.text == yes_no.text
