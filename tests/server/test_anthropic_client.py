#!/usr/bin/env python3
"""Anthropic's official Python client (`anthropic`, pinned in scripts/install_api_clients.sh)
against a real `lazyattn serve` on a synthetic model, over a real socket: messages.create,
messages.stream (text_stream), document blocks as cached documents (the same documents in another
order are cache hits), count_tokens, and errors raised as the client's own exception types.

Run by CTest (server_anthropic_python_client). Under the system python it first runs the install
script (exit 77 there, no PyPI and no cached wheels: skipped), then re-executes itself under the
environment's python. Exit 0: all passed, 1: a failure, 77: skipped.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

IN_VENV = "LAZYATTN_API_CLIENTS_VENV"
ARGS = None
anthropic = None  # the client module, imported once its environment is installed (main)
MODEL = "claude-lazyattn-test"
DOC_A = ("the quick brown fox jumps over the lazy dog and then runs into the forest where it "
         "meets an old owl who knows every path")
DOC_B = ("a stitch in time saves nine, said the tailor, and then he sewed another button onto "
         "the coat before the market opened")


TOOLS = [{"name": "search", "description": "search the passages",
          "input_schema": {"type": "object", "properties": {"q": {"type": "string", "maxLength": 8}}, "required": ["q"]}}]


def bootstrap(args):
    """Under the system python: install the client, then run this file in its venv."""
    if os.environ.get(IN_VENV) == "1":
        return
    r = subprocess.run(["bash", args.install_script], stdout=subprocess.PIPE, text=True)
    if r.returncode == 77:
        print("SKIP: %s could not install the anthropic client (no PyPI, no cached wheels)" % args.install_script)
        sys.exit(77)
    if r.returncode != 0 or not r.stdout.strip():
        print("FAIL: %s exited %d" % (args.install_script, r.returncode))
        sys.exit(1)
    py = r.stdout.strip().splitlines()[-1]
    sys.stdout.flush()
    os.execve(py, [py, os.path.abspath(__file__)] + sys.argv[1:], dict(os.environ, **{IN_VENV: "1"}))


class Server:
    """`lazyattn serve --port 0` as a child process; the port comes from its first stdout line."""

    def __init__(self, model, *flags):
        self.log = tempfile.NamedTemporaryFile(prefix="lazyattn-serve-", suffix=".log", delete=False)
        cmd = [ARGS.lazyattn, "serve", "--port", "0", "--model", model, "--kv-cache-mb", "16",
               "--threads", "1"] + list(flags)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        first = []
        reader = threading.Thread(target=lambda: first.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(60)
        line = first[0] if first else ""
        if "listening on http://" not in line:
            self.proc.kill()
            raise RuntimeError("server did not start: %r" % line)
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        self.port = int(line.split("listening on http://")[1].split()[0].rsplit(":", 1)[1])
        self.base = "http://127.0.0.1:%d" % self.port

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def document(text, title=None):
    d = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text},
         "cache_control": {"type": "ephemeral"}}
    if title:
        d["title"] = title
    return d


class AnthropicClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        model = os.path.join(cls.tmp.name, "synthetic.gguf")
        subprocess.run([ARGS.write_model, model, "2048"], check=True)
        cls.server = Server(model, "--api-key", "sk-ant-test")
        cls.client = anthropic.Anthropic(base_url=cls.server.base, api_key="sk-ant-test", max_retries=0,
                                         timeout=60)

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.tmp.cleanup()
        assert code == 0, "server exited %d" % code

    def create(self, content, **kw):
        kw.setdefault("max_tokens", 6)
        # temperature left the current API (and its SDK); the server still honours it.
        kw.setdefault("extra_body", {"temperature": 0})
        return self.client.messages.create(model=MODEL, messages=[{"role": "user", "content": content}], **kw)

    def test_create(self):
        m = self.create("what is gold?", system="answer briefly", stop_sequences=["\n\n\n"],
                        metadata={"user_id": "u1"}, cache_control={"type": "ephemeral"},
                        extra_body={"temperature": 0, "top_k": 40, "top_p": 0.9})
        self.assertIsInstance(m, anthropic.types.Message)
        self.assertTrue(m.id.startswith("msg_"), m.id)
        self.assertEqual(m.role, "assistant")
        self.assertEqual(m.model, MODEL)
        self.assertEqual(len(m.content), 1)
        self.assertEqual(m.content[0].type, "text")
        self.assertIn(m.stop_reason, ("end_turn", "max_tokens", "stop_sequence"))
        self.assertEqual(m.stop_reason == "max_tokens", m.usage.output_tokens == 6)
        self.assertGreater(m.usage.input_tokens + m.usage.cache_read_input_tokens
                           + m.usage.cache_creation_input_tokens, 0)

    def test_stream_text_matches_create(self):
        whole = self.create("tell me about silver", max_tokens=8)
        with self.client.messages.stream(model=MODEL, max_tokens=8, extra_body={"temperature": 0},
                                         messages=[{"role": "user", "content": "tell me about silver"}]) as s:
            text = "".join(s.text_stream)
            final = s.get_final_message()
        self.assertEqual(text, whole.content[0].text)
        self.assertEqual(final.content[0].text, whole.content[0].text)
        self.assertEqual(final.stop_reason, whole.stop_reason)
        self.assertEqual(final.usage.output_tokens, whole.usage.output_tokens)

    def test_stream_events(self):
        stream = self.client.messages.create(model=MODEL, max_tokens=4, extra_body={"temperature": 0}, stream=True,
                                             messages=[{"role": "user", "content": "hello"}])
        types = [e.type for e in stream]
        self.assertEqual(types[:2], ["message_start", "content_block_start"])
        self.assertEqual(types[-3:], ["content_block_stop", "message_delta", "message_stop"])
        self.assertTrue(all(t == "content_block_delta" for t in types[2:-3]), types)

    def test_documents_in_another_order_hit_the_cache(self):
        question = {"type": "text", "text": "which animal is in the story?"}
        first = self.create([document(DOC_A, "Fox"), document(DOC_B), question], max_tokens=2,
                            system="use the documents")
        second = self.create([document(DOC_B), document(DOC_A, "Fox"), question], max_tokens=2,
                             system="use the documents")
        created = first.usage.cache_creation_input_tokens
        self.assertGreater(created, 0, first.usage)
        self.assertEqual(second.usage.cache_creation_input_tokens, 0, second.usage)
        self.assertGreaterEqual(second.usage.cache_read_input_tokens, created, second.usage)

    def test_count_tokens(self):
        content = [document("gold is a metal", "Gold"), {"type": "text", "text": "what is it?"}]
        counted = self.client.messages.count_tokens(model=MODEL, system="be brief",
                                                    messages=[{"role": "user", "content": content}])
        m = self.create(content, system="be brief", max_tokens=2)
        total = m.usage.input_tokens + m.usage.cache_read_input_tokens + m.usage.cache_creation_input_tokens
        self.assertEqual(counted.input_tokens, total)

    def test_tool_use_round_trip(self):
        m = self.create("find the fox", tools=TOOLS, tool_choice={"type": "any", "disable_parallel_tool_use": True},
                        max_tokens=256)
        self.assertEqual(m.stop_reason, "tool_use")
        uses = [b for b in m.content if b.type == "tool_use"]
        self.assertEqual(len(uses), 1)
        self.assertEqual(uses[0].name, "search")
        self.assertTrue(uses[0].id.startswith("toolu_"))
        self.assertIn("q", uses[0].input)
        # The result goes back as a tool_result block; the next turn answers.
        m2 = self.client.messages.create(model=MODEL, max_tokens=4, tools=TOOLS, messages=[
            {"role": "user", "content": "find the fox"},
            {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in m.content]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": "3 passages"}]}])
        self.assertEqual(m2.role, "assistant")
        # Streamed: the tool_use block and its input_json_delta.
        with self.client.messages.stream(model=MODEL, max_tokens=256, tools=TOOLS,
                                         tool_choice={"type": "tool", "name": "search", "disable_parallel_tool_use": True},
                                         messages=[{"role": "user", "content": "find the fox"}],
                                         extra_body={"temperature": 0}) as stream:
            final = stream.get_final_message()
        streamed = [b for b in final.content if b.type == "tool_use"]
        self.assertEqual(len(streamed), 1)
        self.assertIn("q", streamed[0].input)
        self.assertEqual(final.stop_reason, "tool_use")

    def test_structured_output(self):
        """output_config.format (the SDK's parameter), and the beta output_format as the SDK's
        extra_body sends it: the text block is a document valid against the schema."""
        schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}, "required": ["answer"],
                  "additionalProperties": False}
        fmt = {"type": "json_schema", "schema": schema}
        m = self.create("is the fox quick?", max_tokens=256, output_config={"format": fmt})
        self.assertEqual(m.stop_reason, "end_turn")
        self.assertIn(json.loads(m.content[0].text)["answer"], ("yes", "no"))
        beta = self.create("is the fox quick?", max_tokens=256, extra_body={"temperature": 0, "output_format": fmt},
                           extra_headers={"anthropic-beta": "structured-outputs-2025-11-13"})
        self.assertEqual(beta.content[0].text, m.content[0].text)  # one constraint, temperature 0
        with self.client.messages.stream(model=MODEL, max_tokens=256, output_config={"format": fmt},
                                         messages=[{"role": "user", "content": "is the fox quick?"}],
                                         extra_body={"temperature": 0}) as stream:
            text = "".join(stream.text_stream)
        self.assertEqual(text, m.content[0].text)
        with self.assertRaises(anthropic.BadRequestError) as bad:
            self.create("hi", output_config={"format": {"type": "json_schema", "schema": {"type": "no-such-type"}}})
        self.assertIn("output_config.format.schema", bad.exception.message)

    def test_errors(self):
        with self.assertRaises(anthropic.BadRequestError) as bad:
            self.create([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA=="}}])
        self.assertEqual(bad.exception.status_code, 400)
        self.assertEqual(bad.exception.body["type"], "error")
        self.assertEqual(bad.exception.body["error"]["type"], "invalid_request_error")
        self.assertIn("images are not served", bad.exception.message)
        with self.assertRaises(anthropic.BadRequestError) as tools:
            self.create("hi", tools=[{"type": "web_search_20250305", "name": "web_search"}])
        self.assertIn("server tools", tools.exception.message)
        with self.assertRaises(anthropic.BadRequestError) as named:
            self.create("hi", tools=TOOLS, tool_choice={"type": "tool", "name": "nope"})
        self.assertIn("tool_choice.name", named.exception.message)
        wrong_key = anthropic.Anthropic(base_url=self.server.base, api_key="wrong", max_retries=0)
        with self.assertRaises(anthropic.AuthenticationError):
            wrong_key.messages.create(model=MODEL, max_tokens=2, messages=[{"role": "user", "content": "hi"}])


def main():
    global ARGS, anthropic
    parser = argparse.ArgumentParser()
    parser.add_argument("--lazyattn", required=True)
    parser.add_argument("--write-model", required=True)
    parser.add_argument("--install-script", required=True)
    ARGS, rest = parser.parse_known_args()
    bootstrap(ARGS)
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    import anthropic as client_module
    anthropic = client_module
    prog = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
