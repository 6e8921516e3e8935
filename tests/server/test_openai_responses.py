#!/usr/bin/env python3
"""The official `openai` Python client's Responses API against a real `lazyattn serve`.

Run by CTest (server_openai_responses_python) on the synthetic model, with the same client and
server helper as test_openai_client.py: client.responses.create with a string, an item list and
instructions; streamed (create(stream=True) and the client.responses.stream helper, which checks
the event sequence as it accumulates it); documents through extra_body reused from the cache on a
reordered second request; kept responses retrieved, continued (previous_response_id) and
deleted; errors raised as the client's exceptions. Exits 77 (skipped) when the
`openai` package is missing; scripts/install_deps.sh installs it.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_openai_client as base  # exits 77 itself when openai is missing

import openai

DOCS = [{"text": "gold is a chemical element with the symbol Au"}, "silver is shiny too, and conducts best"]


class OpenAiResponsesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        model = os.path.join(cls.tmp.name, "synthetic.gguf")
        subprocess.run([base.ARGS.write_model, model, "2048"], check=True)
        cls.server = base.Server(model)
        cls.client = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.tmp.cleanup()
        assert code == 0, "server exit code %d" % code

    def create(self, input, extra=None, **kw):
        body = {"ignore_eos": True}
        body.update(extra or {})
        kw.setdefault("max_output_tokens", 4)
        return self.client.responses.create(model=self.server.model_id, input=input, temperature=0,
                                            extra_body=body, **kw)

    def test_string_input(self):
        r = self.create("what is gold?")
        self.assertTrue(r.id.startswith("resp_"), r.id)
        self.assertEqual(r.object, "response")
        self.assertEqual(r.model, self.server.model_id)
        self.assertEqual(r.status, "incomplete")  # ignore_eos: it ran to max_output_tokens
        self.assertEqual(r.incomplete_details.reason, "max_output_tokens")
        self.assertEqual(len(r.output), 1)
        self.assertTrue(r.output[0].id.startswith("msg_"), r.output[0].id)
        self.assertEqual(r.output[0].role, "assistant")
        self.assertEqual(r.output[0].content[0].type, "output_text")
        self.assertEqual(r.output_text, r.output[0].content[0].text)  # the client's own property
        self.assertEqual(r.usage.output_tokens, 4)
        self.assertEqual(r.usage.output_tokens_details.reasoning_tokens, 0)
        self.assertEqual(r.usage.total_tokens, r.usage.input_tokens + 4)
        self.assertEqual(r.max_output_tokens, 4)

    def test_item_list_with_instructions_is_the_chat_conversation(self):
        items = [{"role": "developer", "content": "be brief"},
                 {"role": "user", "content": [{"type": "input_text", "text": "hello"}]},
                 {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi!"}]},
                 {"role": "user", "content": "what is gold?"}]
        r = self.create(items, instructions="you answer questions about metals")
        self.assertEqual(r.instructions, "you answer questions about metals")
        chat = self.client.chat.completions.create(
            model=self.server.model_id, max_tokens=4, temperature=0, extra_body={"ignore_eos": True},
            messages=[{"role": "system", "content": "you answer questions about metals"},
                      {"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"},
                      {"role": "assistant", "content": "hi!"}, {"role": "user", "content": "what is gold?"}])
        self.assertEqual(r.usage.input_tokens, chat.usage.prompt_tokens)
        self.assertEqual(r.output_text, chat.choices[0].message.content)

    def test_stream_collects_deltas(self):
        whole = self.create("what is gold?")
        events = list(self.create("what is gold?", stream=True))
        types = [e.type for e in events]
        self.assertEqual(types[:4], ["response.created", "response.in_progress", "response.output_item.added",
                                     "response.content_part.added"])
        self.assertEqual(types[-4:], ["response.output_text.done", "response.content_part.done",
                                      "response.output_item.done", "response.incomplete"])
        self.assertEqual([e.sequence_number for e in events], list(range(len(events))))
        text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        self.assertEqual(text, whole.output_text)
        self.assertEqual(events[-1].response.output_text, text)
        self.assertEqual(events[-1].response.usage.output_tokens, 4)
        item_id = events[2].item.id
        self.assertTrue(all(e.item_id == item_id for e in events if hasattr(e, "item_id")))

    def test_stream_helper_final_response(self):
        # A stop string taken from the greedy text ends it early: status "completed", which the
        # helper's get_final_response needs.
        text = self.create("tell me about silver", max_output_tokens=8).output_text
        self.assertTrue(text)
        stop = text[len(text) // 2]
        with self.client.responses.stream(model=self.server.model_id, input="tell me about silver", temperature=0,
                                          max_output_tokens=8, extra_body={"stop": [stop]}) as stream:
            deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
            final = stream.get_final_response()
        self.assertEqual(final.status, "completed")
        self.assertEqual(final.output_text, text[:text.index(stop)])
        self.assertEqual("".join(deltas), final.output_text)

    def test_documents_hit_the_cache_in_any_order(self):
        first = self.create("what is gold?", extra={"documents": DOCS})
        second = self.create("what is gold?", extra={"documents": list(reversed(DOCS))})
        self.assertEqual(second.usage.input_tokens, first.usage.input_tokens)
        self.assertGreater(second.usage.input_tokens_details.cached_tokens,
                           first.usage.input_tokens_details.cached_tokens)
        self.assertGreater(second.usage.input_tokens_details.cached_tokens, second.usage.input_tokens // 2)

    def test_kept_responses_are_retrieved_continued_and_deleted(self):
        first = self.create("my name is Ada")
        got = self.client.responses.retrieve(first.id)
        self.assertEqual(got.id, first.id)
        self.assertEqual(got.output_text, first.output_text)
        second = self.create("what is my name?", previous_response_id=first.id)
        self.assertEqual(second.previous_response_id, first.id)
        self.assertGreater(second.usage.input_tokens, first.usage.input_tokens + first.usage.output_tokens)
        self.client.responses.delete(first.id)
        with self.assertRaises(openai.NotFoundError):
            self.client.responses.retrieve(first.id)
        with self.assertRaises(openai.BadRequestError) as bad:
            self.create("again?", previous_response_id=first.id)
        self.assertEqual(bad.exception.param, "previous_response_id")
        unkept = self.create("x", store=False)
        with self.assertRaises(openai.NotFoundError):
            self.client.responses.retrieve(unkept.id)

    def test_function_call_round_trip(self):
        tools = [{"type": "function", "name": "search", "parameters": {
            "type": "object", "properties": {"q": {"type": "string", "maxLength": 8}}, "required": ["q"]}}]
        r = self.create("find the fox", extra={"ignore_eos": False}, tools=tools, tool_choice="required",
                        parallel_tool_calls=False, max_output_tokens=256)
        calls = [o for o in r.output if o.type == "function_call"]
        self.assertEqual(len(calls), 1)
        self.assertEqual(calls[0].name, "search")
        self.assertIn("q", json.loads(calls[0].arguments))
        self.assertEqual(r.tool_choice, "required")
        # The call and its output go back as input items; the next turn answers.
        r2 = self.create([{"role": "user", "content": "find the fox"},
                          {"type": "function_call", "call_id": calls[0].call_id, "name": "search",
                           "arguments": calls[0].arguments},
                          {"type": "function_call_output", "call_id": calls[0].call_id, "output": "3 passages"}],
                         tools=tools)
        self.assertEqual(r2.usage.output_tokens, 4)
        # The agent loop by previous_response_id: the kept response carries its call, so its
        # output alone continues it; the model sees what the items above showed it.
        r3 = self.create([{"type": "function_call_output", "call_id": calls[0].call_id, "output": "3 passages"}],
                         previous_response_id=r.id, tools=tools)
        self.assertEqual(r3.previous_response_id, r.id)
        self.assertEqual(r3.usage.input_tokens, r2.usage.input_tokens)
        self.assertEqual(r3.output_text, r2.output_text)

    def test_errors_raise_the_matching_exceptions(self):
        with self.assertRaises(openai.BadRequestError) as bad:
            self.create([{"role": "user", "content": [
                {"type": "input_text", "text": "what is this?"},
                {"type": "input_image", "image_url": "https://example.com/x.png", "detail": "auto"}]}])
        self.assertEqual(bad.exception.status_code, 400)
        self.assertEqual(bad.exception.param, "input[0].content[1]")
        with self.assertRaises(openai.BadRequestError) as bad:
            self.create("x", max_output_tokens=0)
        self.assertEqual(bad.exception.param, "max_output_tokens")
        with self.assertRaises(openai.BadRequestError) as bad:
            self.create("x", previous_response_id="resp_123")
        self.assertEqual(bad.exception.param, "previous_response_id")
        with self.assertRaises(openai.BadRequestError) as bad:
            self.create("x", text={"format": {"type": "xml"}})
        self.assertEqual(bad.exception.param, "text.format.type")
        with self.assertRaises(openai.BadRequestError) as bad:
            self.create("x", tools=[{"type": "web_search"}])
        self.assertEqual(bad.exception.param, "tools[0].type")
        with self.assertRaises(openai.BadRequestError) as bad:
            self.create("x", tools=[{"type": "function", "name": "f g", "parameters": {}}])
        self.assertEqual(bad.exception.param, "tools[0].name")
        with self.assertRaises(openai.NotFoundError):
            self.client.responses.retrieve("resp_123")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lazyattn", required=True)
    parser.add_argument("--write-model", required=True)
    base.ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
