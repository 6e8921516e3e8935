"""Tool calls through the Python API (docs/python.md "Tool calls"): tools=, tool_choice= and
parallel_tool_calls= on chat/stream and AsyncLLM's twins, served by the server's own tool_calls
module (rendering, the grammar that forces a call, the parser, the 400s as ValueError); results
carry ToolCall objects and finish_reason "tool_calls"; tool turns go back into the conversation."""

import asyncio
import json

import pytest

import lazyattn

SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the library for passages about a topic.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "maxLength": 40}},
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"enum": ["Lyon", "Paris", "Rome"]}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
QUESTION = [{"role": "user", "content": "Which rivers meet in Lyon?"}]


def check_search(call):
    assert isinstance(call, lazyattn.ToolCall)
    assert call.id.startswith("call_") and call.name == "search"
    assert json.loads(call.arguments) == call.args
    assert set(call.args) == {"query"} and isinstance(call.args["query"], str) and len(call.args["query"]) <= 40


def test_required_makes_a_valid_call(llm):
    # Parallel calls allowed: the grammar admits a list of calls, and the small model may write
    # more than max_tokens holds; every call it completed is valid all the same.
    many = llm.chat(QUESTION, tools=[SEARCH], tool_choice="required", max_tokens=48)
    assert many.tool_calls and many.finish_reason in ("tool_calls", "length"), many
    for call in many.tool_calls:
        check_search(call)
    out = llm.chat(QUESTION, tools=[SEARCH], tool_choice="required", parallel_tool_calls=False, max_tokens=64)
    assert out.finish_reason == "tool_calls", out
    assert len(out.tool_calls) == 1, out
    check_search(out.tool_calls[0])
    assert out.text == ""  # the reply was calls alone
    assert out.message == {"role": "assistant", "content": "", "tool_calls": [c.to_dict() for c in out.tool_calls]}
    # Without tools the same question is prose: no calls, the usual finish.
    plain = llm.chat(QUESTION, max_tokens=16)
    assert plain.tool_calls == [] and plain.finish_reason in ("stop", "length")


def test_named_choice_and_one_call(llm):
    named = {"type": "function", "function": {"name": "get_weather"}}
    out = llm.chat(QUESTION, tools=[SEARCH, WEATHER], tool_choice=named, parallel_tool_calls=False, max_tokens=64)
    assert out.finish_reason == "tool_calls", out
    assert len(out.tool_calls) == 1
    call = out.tool_calls[0]
    assert call.name == "get_weather" and call.args["city"] in ("Lyon", "Paris", "Rome")


def test_choice_none_is_plain_text(llm):
    out = llm.chat(QUESTION, tools=[SEARCH], tool_choice="none", max_tokens=24)
    assert out.tool_calls == [] and out.finish_reason in ("stop", "length") and out.text


def test_tool_turns_go_back_into_the_conversation(llm):
    first = llm.chat(QUESTION, tools=[SEARCH], tool_choice="required", parallel_tool_calls=False, max_tokens=64)
    call = first.tool_calls[0]
    result = {"role": "tool", "tool_call_id": call.id, "content": "Lyon: the Rhone and the Saone meet there."}
    # The assistant turn as Completion.message gives it (OpenAI's dicts), or with the ToolCall objects.
    for assistant in (first.message, {"role": "assistant", "content": "", "tool_calls": first.tool_calls}):
        out = llm.chat(QUESTION + [assistant, result], tools=[SEARCH], tool_choice="none", max_tokens=24)
        assert out.tool_calls == [] and out.text
        # The call and its result are in the prompt: more tokens than the question alone.
        assert out.usage.prompt_tokens > llm.chat(QUESTION, max_tokens=1).usage.prompt_tokens + 20
    # A malformed earlier call is the server's 400, naming the field.
    bad = dict(first.message, tool_calls=[{"id": "x", "type": "function", "function": {"name": "no spaces"}}])
    with pytest.raises(ValueError, match=r"messages\[1\]\.tool_calls\[0\]\.function\.name"):
        llm.chat(QUESTION + [bad, result], max_tokens=4)


def test_stream_yields_each_call_once_complete(llm):
    stream = llm.stream(QUESTION, tools=[SEARCH], tool_choice="required", parallel_tool_calls=False, max_tokens=64)
    chunks = list(stream)
    streamed = [c for chunk in chunks for c in chunk.tool_calls]
    assert stream.result.finish_reason == "tool_calls"
    # The stream and the whole agree: the same calls with the same ids, the same content.
    assert streamed == stream.result.tool_calls and streamed
    assert "".join(chunks) == stream.result.text
    for call in streamed:
        check_search(call)


def test_async_twins(llm):
    async def run():
        allm = lazyattn.AsyncLLM.from_llm(llm)
        out = await allm.chat(QUESTION, tools=[SEARCH], tool_choice="required", parallel_tool_calls=False, max_tokens=64)
        calls = []
        async with allm.stream(QUESTION, tools=[SEARCH], tool_choice="required", parallel_tool_calls=False, max_tokens=64) as s:
            async for chunk in s:
                calls += chunk.tool_calls
        return out, calls, s.result

    out, calls, result = asyncio.run(run())
    assert out.finish_reason == "tool_calls" and out.tool_calls
    assert calls == result.tool_calls and calls and result.finish_reason == "tool_calls"
    for call in out.tool_calls + calls:
        check_search(call)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"tool_choice": "required"}, "tool_choice"),  # a forced choice with no tools
        ({"tools": [SEARCH], "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "tool_choice.function.name"),
        ({"tools": [dict(SEARCH, function=dict(SEARCH["function"], name="bad name"))]}, "tools[0].function.name"),
        ({"tools": [dict(SEARCH, function=dict(SEARCH["function"], parameters={"type": "object", "properties": {"q": {"type": "nonsense"}}}))]},
         "tools[0].function.parameters"),
        ({"tools": [SEARCH, SEARCH]}, "tools[1].function.name"),  # names must be distinct
        ({"tools": [SEARCH], "tool_choice": "sometimes"}, "tool_choice"),
        ({"tools": [SEARCH], "tool_choice": "required", "json_schema": {"type": "object"}}, "tool_choice"),
    ],
)
def test_bad_tools_are_value_errors_naming_the_field(llm, kwargs, field):
    with pytest.raises(ValueError) as e:
        llm.chat(QUESTION, max_tokens=4, **kwargs)
    assert field in str(e.value)
    assert llm.chat(QUESTION, max_tokens=2).finish_reason == "length"  # the LLM takes the next request


def test_tools_need_a_chat_and_types_are_checked(llm):
    with pytest.raises(ValueError, match="tools"):
        llm.generate("Lyon is", tools=[SEARCH], max_tokens=4)  # /v1/completions has no tools
    with pytest.raises(TypeError, match="tools must be a list"):
        llm.chat(QUESTION, tools="search")
    with pytest.raises(TypeError, match=r"tools\[0\] must be"):
        llm.chat(QUESTION, tools=["search"])
    with pytest.raises(TypeError, match="tool_choice must be"):
        llm.chat(QUESTION, tools=[SEARCH], tool_choice=1)
    with pytest.raises(TypeError, match="parallel_tool_calls must be a bool"):
        llm.chat(QUESTION, tools=[SEARCH], parallel_tool_calls="no")
