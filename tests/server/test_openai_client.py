#!/usr/bin/env python3
"""The official `openai` Python client against a real `lazyattn serve` on a synthetic model.

Run by CTest (server_openai_python_client). Exits 77 (CTest: skipped) with a message when the
`openai` package is missing; scripts/install_deps.sh installs it.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

try:
    import openai
    from prometheus_client.parser import text_string_to_metric_families
except ImportError as e:
    print("SKIP: %s (scripts/install_deps.sh installs `openai` and `prometheus_client`)" % e)
    sys.exit(77)

ARGS = None
DOCS = [
    "the quick brown fox jumps over the lazy dog",
    {"title": "Proverb", "text": "a stitch in time saves nine and then some more"},
    {"text": "all that glitters is not gold, said the old man"},
]


class Server:
    """`lazyattn serve --port 0` as a child process; the port comes from its first stdout line."""

    def __init__(self, model):
        self.model_id = os.path.basename(model)
        self.proc = subprocess.Popen(
            [ARGS.lazyattn, "serve", "--port", "0", "--model", model, "--kv-cache-mb", "16", "--threads", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.proc.stdout.readline()
        if "listening on http://" not in line:
            raise RuntimeError("server did not start: %r" % line)
        self.port = int(line.split("listening on http://")[1].split()[0].rsplit(":", 1)[1])
        self.base = "http://127.0.0.1:%d" % self.port

    def client(self):
        return openai.OpenAI(base_url=self.base + "/v1", api_key="unused", max_retries=0, timeout=60)

    def post(self, path, body):
        req = urllib.request.Request(self.base + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


class OpenAiClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        model = os.path.join(cls.tmp.name, "synthetic.gguf")
        subprocess.run([ARGS.write_model, model, "2048"], check=True)
        cls.server = Server(model)
        cls.client = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        cls.tmp.cleanup()
        assert code == 0, "server exit code %d" % code

    def chat(self, docs, **kw):
        return self.client.chat.completions.create(
            model=self.server.model_id, messages=[{"role": "user", "content": "what is gold?"}],
            max_tokens=4, temperature=0, extra_body={"documents": docs, "ignore_eos": True}, **kw)

    def test_models_list(self):
        models = self.client.models.list()
        self.assertEqual([m.id for m in models.data], [self.server.model_id])

    def test_chat_with_documents_reports_cached_tokens(self):
        docs = [{"text": "gold is a chemical element with the symbol Au"}, "silver is shiny too"]
        first = self.chat(docs)
        self.assertEqual(first.object, "chat.completion")
        self.assertEqual(first.choices[0].message.role, "assistant")
        self.assertIsInstance(first.choices[0].message.content, str)
        self.assertEqual(first.choices[0].finish_reason, "length")
        self.assertEqual(first.usage.completion_tokens, 4)
        second = self.chat(list(reversed(docs)))
        self.assertEqual(second.usage.prompt_tokens, first.usage.prompt_tokens)
        # The documents were computed by the first request (the system preamble may have been
        # cached before it); in the second they are hits too, whatever their order.
        self.assertGreater(second.usage.prompt_tokens_details.cached_tokens,
                           first.usage.prompt_tokens_details.cached_tokens)
        self.assertGreater(second.usage.prompt_tokens_details.cached_tokens, second.usage.prompt_tokens // 2)

    def test_chat_stream_with_usage(self):
        stream = self.chat(DOCS, stream=True, stream_options={"include_usage": True})
        chunks = list(stream)
        self.assertEqual(chunks[0].choices[0].delta.role, "assistant")
        self.assertEqual(chunks[-2].choices[0].finish_reason, "length")
        self.assertEqual(chunks[-1].choices, [])
        self.assertEqual(chunks[-1].usage.completion_tokens, 4)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        whole = self.chat(DOCS)
        self.assertEqual(text, whole.choices[0].message.content)

    def test_completion_stream(self):
        stream = self.client.completions.create(model=self.server.model_id, prompt="the cat sat on", max_tokens=5,
                                                temperature=0, stream=True, extra_body={"ignore_eos": True})
        chunks = list(stream)
        self.assertEqual(chunks[-1].choices[0].finish_reason, "length")
        text = "".join(c.choices[0].text for c in chunks)
        whole = self.client.completions.create(model=self.server.model_id, prompt="the cat sat on", max_tokens=5,
                                               temperature=0, extra_body={"ignore_eos": True})
        self.assertEqual(whole.choices[0].text, text)
        self.assertEqual(whole.usage.completion_tokens, 5)

    def test_pinned_document_by_id(self):
        pinned = self.server.post("/v1/documents", {"documents": ["a pinned passage about the moon and its craters"]})
        doc = pinned["data"][0]
        r = self.chat([{"id": doc["id"]}])
        self.assertGreaterEqual(r.usage.prompt_tokens_details.cached_tokens, doc["tokens"])

    def test_metrics_parse_with_prometheus_client(self):
        """vLLM's metric stems under the lazyattn_ prefix, their types, and model_name on every such
        sample; llama-server's llamacpp:* series parse too."""
        self.chat(DOCS)
        with urllib.request.urlopen(self.server.base + "/metrics", timeout=30) as r:
            text = r.read().decode()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        # prometheus_client reports counters without their _total suffix.
        want = {
            "lazyattn_prompt_tokens": "counter", "lazyattn_generation_tokens": "counter",
            "lazyattn_num_requests_running": "gauge", "lazyattn_num_requests_waiting": "gauge",
            "lazyattn_kv_cache_usage_perc": "gauge", "lazyattn_time_to_first_token_seconds": "histogram",
            "lazyattn_inter_token_latency_seconds": "histogram", "lazyattn_request_queue_time_seconds": "histogram",
            "lazyattn_e2e_request_latency_seconds": "histogram", "lazyattn_num_preemptions": "counter",
            "lazyattn_request_success": "counter", "lazyattn_prefix_cache_queries": "counter",
            "lazyattn_prefix_cache_hits": "counter", "lazyattn_document_lookups": "counter",
            "lazyattn_document_hits": "counter", "lazyattn_document_misses": "counter",
            "lazyattn_segment_job_tokens": "counter", "lazyattn_http_requests": "counter",
        }
        for name, kind in want.items():
            self.assertIn(name, families, name)
            self.assertEqual(families[name].type, kind, name)
        for family in families.values():
            for s in family.samples:
                if family.name.startswith("llamacpp:"):
                    # llama-server's series, unlabelled as it writes them (its clients skip labelled lines).
                    self.assertEqual(s.labels, {}, s)
                else:
                    self.assertEqual(s.labels.get("model_name"), self.server.model_id, s)
        self.assertEqual(families["llamacpp:tokens_predicted"].type, "counter")
        self.assertEqual(families["llamacpp:requests_processing"].type, "gauge")
        reasons = {s.labels["finished_reason"] for s in families["lazyattn_request_success"].samples}
        self.assertEqual(reasons, {"stop", "length", "abort", "error"})
        usage = [s.value for s in families["lazyattn_kv_cache_usage_perc"].samples]
        self.assertTrue(all(0 <= u <= 1 for u in usage), usage)
        ttft = [s for s in families["lazyattn_time_to_first_token_seconds"].samples if s.name.endswith("_count")]
        self.assertGreaterEqual(ttft[0].value, 1)

    def test_tokenize_and_detokenize_in_both_shapes(self):
        llama = self.server.post("/tokenize", {"content": "the cat sat on", "with_pieces": True})
        vllm = self.server.post("/tokenize", {"model": self.server.model_id, "prompt": "the cat sat on"})
        ids = [t["id"] for t in llama["tokens"]]
        self.assertEqual(ids, vllm["tokens"])
        self.assertEqual(vllm["count"], len(ids))
        self.assertEqual(vllm["max_model_len"], 2048)
        self.assertEqual("".join(t["piece"] for t in llama["tokens"]), "the cat sat on")
        back = self.server.post("/detokenize", {"tokens": ids})
        self.assertEqual(back["content"], "the cat sat on")
        self.assertEqual(back["prompt"], "the cat sat on")
        # The prompt's usage counts exactly these tokens.
        r = self.client.completions.create(model=self.server.model_id, prompt="the cat sat on", max_tokens=1)
        self.assertEqual(r.usage.prompt_tokens, len(ids))
        chat = self.server.post("/tokenize", {"messages": [{"role": "user", "content": "hi"}]})
        self.assertGreater(chat["count"], 2)
        with self.assertRaises(urllib.error.HTTPError) as bad:
            self.server.post("/detokenize", {"tokens": [10 ** 9]})
        self.assertEqual(bad.exception.code, 400)

    def test_documents_given_as_tokens(self):
        ids = self.server.post("/tokenize", {"content": "a passage given as token ids\n\n"})["tokens"]
        pinned = self.server.post("/v1/documents", {"documents": [{"tokens": ids}]})["data"][0]
        self.assertEqual(pinned["tokens"], len(ids))
        # The same tokens in a request are a hit on the pinned document.
        r = self.chat([{"tokens": ids}])
        self.assertGreaterEqual(r.usage.prompt_tokens_details.cached_tokens, len(ids))

    def test_errors_raise_the_matching_exceptions(self):
        with self.assertRaises(openai.BadRequestError) as bad:
            self.client.chat.completions.create(model=self.server.model_id, temperature=-1,
                                                messages=[{"role": "user", "content": "x"}])
        self.assertEqual(bad.exception.status_code, 400)
        self.assertEqual(bad.exception.code, "invalid_value")
        self.assertEqual(bad.exception.param, "temperature")
        # Another model's name is answered by the served model, as llama-server does (LangChain
        # sends a default name); --strict-model-name gives vLLM's 404 (test_server_errors.cpp).
        other = self.client.chat.completions.create(model="gpt-17", max_tokens=1,
                                                    messages=[{"role": "user", "content": "x"}])
        self.assertEqual(other.model, self.server.model_id)
        with self.assertRaises(openai.BadRequestError):
            self.chat([{"id": "no-such-document"}])
        with self.assertRaises(openai.BadRequestError):
            self.client.completions.create(model=self.server.model_id, prompt="x", n=17)
        with self.assertRaises(openai.BadRequestError):
            self.client.chat.completions.create(model=self.server.model_id, top_logprobs=3,
                                                messages=[{"role": "user", "content": "x"}])

    def test_chat_logprobs_whole_and_streamed(self):
        whole = self.chat(DOCS, logprobs=True, top_logprobs=3)
        content = whole.choices[0].logprobs.content
        self.assertEqual(len(content), 4)
        for t in content:
            self.assertLessEqual(t.logprob, 0)
            self.assertEqual(len(t.top_logprobs), 3)
            # Greedy: the chosen token is the most likely one.
            self.assertEqual(t.token, t.top_logprobs[0].token)
            self.assertAlmostEqual(t.logprob, t.top_logprobs[0].logprob, places=5)
            self.assertEqual(bytes(t.bytes).decode("utf-8", "replace"), t.token)
        chunks = list(self.chat(DOCS, logprobs=True, top_logprobs=3, stream=True))
        streamed = [t for c in chunks if c.choices and c.choices[0].logprobs for t in c.choices[0].logprobs.content]
        self.assertEqual([t.token for t in streamed], [t.token for t in content])
        for a, b in zip(streamed, content):
            self.assertAlmostEqual(a.logprob, b.logprob, places=5)

    def test_completion_logprobs_and_echo(self):
        r = self.client.completions.create(model=self.server.model_id, prompt="the cat sat on", max_tokens=3,
                                           temperature=0, logprobs=2, echo=True, extra_body={"ignore_eos": True})
        lp = r.choices[0].logprobs
        self.assertTrue(r.choices[0].text.startswith("the cat sat on"))
        self.assertEqual(len(lp.tokens), len(lp.token_logprobs))
        self.assertEqual(len(lp.tokens), r.usage.prompt_tokens + 3)
        self.assertIsNone(lp.token_logprobs[0])  # nothing precedes the first prompt token
        self.assertTrue(all(v <= 0 for v in lp.token_logprobs[1:]))
        self.assertEqual(lp.text_offset[0], 0)
        self.assertEqual("".join(lp.tokens), r.choices[0].text)
        # Scoring only (lm-evaluation-harness's loglikelihood request): max_tokens 0.
        score = self.client.completions.create(model=self.server.model_id, prompt="the cat sat on", max_tokens=0,
                                               temperature=0, logprobs=1, echo=True)
        self.assertEqual(score.choices[0].text, "the cat sat on")
        self.assertEqual(score.usage.completion_tokens, 0)
        for a, b in zip(score.choices[0].logprobs.token_logprobs[1:], lp.token_logprobs[1:r.usage.prompt_tokens]):
            self.assertAlmostEqual(a, b, places=4)

    def test_several_choices_and_penalties(self):
        r = self.client.completions.create(model=self.server.model_id, prompt="the cat sat on", max_tokens=4,
                                           temperature=1.0, seed=7, n=3, presence_penalty=0.5, frequency_penalty=0.5,
                                           extra_body={"ignore_eos": True})
        self.assertEqual([c.index for c in r.choices], [0, 1, 2])
        self.assertEqual(r.usage.completion_tokens, 12)
        again = self.client.completions.create(model=self.server.model_id, prompt="the cat sat on", max_tokens=4,
                                               temperature=1.0, seed=7, n=3, presence_penalty=0.5,
                                               frequency_penalty=0.5, extra_body={"ignore_eos": True})
        self.assertEqual([c.text for c in r.choices], [c.text for c in again.choices])  # seeded: reproducible
        chunks = list(self.client.chat.completions.create(
            model=self.server.model_id, messages=[{"role": "user", "content": "hi"}], max_tokens=3, n=2,
            stream=True, extra_body={"ignore_eos": True}))
        finished = sorted(c.choices[0].index for c in chunks if c.choices and c.choices[0].finish_reason)
        self.assertEqual(finished, [0, 1])

    def test_tool_calls_round_trip(self):
        tools = [{"type": "function", "function": {
            "name": "search", "description": "search the passages",
            "parameters": {"type": "object", "properties": {"q": {"type": "string", "maxLength": 8}},
                           "required": ["q"]}}}]
        messages = [{"role": "user", "content": "find the fox"}]
        r = self.client.chat.completions.create(model=self.server.model_id, messages=messages, tools=tools,
                                                tool_choice="required", parallel_tool_calls=False, max_tokens=256,
                                                seed=1)
        choice = r.choices[0]
        self.assertEqual(choice.finish_reason, "tool_calls")
        self.assertIsNone(choice.message.content)
        call = choice.message.tool_calls[0]
        self.assertEqual((call.type, call.function.name), ("function", "search"))
        self.assertIn("q", json.loads(call.function.arguments))
        # The loop's next turn: the call and its result in the conversation, passages as documents.
        messages += [choice.message.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": call.id, "content": "3 passages"}]
        r2 = self.client.chat.completions.create(model=self.server.model_id, messages=messages, tools=tools,
                                                 max_tokens=4, extra_body={"documents": DOCS, "ignore_eos": True})
        self.assertEqual(r2.usage.completion_tokens, 4)
        # Streamed: the first delta names the call, the arguments follow.
        deltas = [tc for c in self.client.chat.completions.create(
            model=self.server.model_id, messages=messages[:1], tools=tools,
            tool_choice={"type": "function", "function": {"name": "search"}}, max_tokens=256, seed=1, stream=True)
            if c.choices and c.choices[0].delta.tool_calls for tc in c.choices[0].delta.tool_calls]
        self.assertEqual(deltas[0].function.name, "search")
        self.assertTrue(deltas[0].id.startswith("call_"))
        self.assertIn("q", json.loads("".join(d.function.arguments or "" for d in deltas)))
        with self.assertRaises(openai.BadRequestError):
            self.client.chat.completions.create(model=self.server.model_id, messages=messages[:1], tools=tools,
                                                tool_choice={"type": "function", "function": {"name": "nope"}})


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--lazyattn", required=True)
    parser.add_argument("--write-model", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
