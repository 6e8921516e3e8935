#!/usr/bin/env python3
"""RAG frameworks, their own code unmodified, against a real `lazyattn serve` on SmolLM2-135M:
the passages they stuff into a prompt become cached document segments through `documents_from`
/ `document_delimiter` (a request field, or the server's --documents-from, --document-delimiter,
--documents-message), so a second request with the same passages in another order reads them
from the cache.

  a. the openai client: passages as content parts of the last user message (documents_from
     "parts"), and a part naming a registered document by id;
  b. LangChain: create_stuff_documents_chain, the passages between blank lines in the system message;
  c. LlamaIndex: a VectorStoreIndex query engine, the passages in its text QA template;
  d. Haystack: ChatPromptBuilder + OpenAIChatGenerator, the passages in the user message;
  e. one server-wide delimiter setting, and the frameworks with no extra setting at all;
  f. prompts of the application's own (issue 48): LangChain with a user message that begins with
     "{context}" (the first passage is a document), and a flat prompt whose passages the server
     knows (documents_from known): >= 95% of the reordered request's document tokens cached.

Run by CTest (server_rag_frameworks) with the system python3: it runs
scripts/install_rag_clients.sh (exit 77 there, no PyPI and no cached wheels: skipped), then
re-executes itself under .venv-rag-clients/bin/python. Exit 0: all passed, 1: a failure, 77:
skipped.
"""
import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
IN_VENV = "LAZYATTN_RAG_FRAMEWORKS_IN_VENV"
ARGS = None
RESULTS = []          # (case, document_tokens, cached_tokens) of each second request
MAX_TOKENS = 8
WORDS = 60            # passages are cut to this many words: the test stays fast
MIN_SHARE = 0.8       # the second request reads at least this share of its document tokens from the cache

# LlamaIndex's text QA template frames the context with 21 dashes
# (llama_index/core/prompts/chat_prompts.py: "Context information is below.\n---------------------\n
# {context_str}\n---------------------\n..."), its nodes are joined by "\n\n"; Haystack's template
# below indents each document by 4 spaces after a blank line.
DELIMITER_LLAMAINDEX = "regex:\\n\\n *|\\n-{21}\\n"
DELIMITER_HAYSTACK = "regex:\\n\\n *"
LANGCHAIN_SYSTEM = "Answer the question using the context below."
HAYSTACK_TEMPLATE = ("Given the following information, answer the question.\nContext:\n"
                     "{% for document in documents %}\n    {{ document.content }}\n{% endfor %}\n"
                     "Question: {{question}}\nAnswer:")


def bootstrap(args):
    """Under the system python: install the frameworks, then run this file in their venv."""
    if os.environ.get(IN_VENV) == "1":
        return
    print("[test_rag_frameworks] %s" % args.install_script, flush=True)
    r = subprocess.run(["bash", args.install_script], stdout=subprocess.PIPE, text=True)
    if r.returncode == 77:
        print("SKIP: %s could not install the RAG frameworks (no PyPI, no cached wheels)" % args.install_script)
        sys.exit(77)
    if r.returncode != 0 or not r.stdout.strip():
        print("FAIL: %s exited %d" % (args.install_script, r.returncode))
        sys.exit(1)
    py = r.stdout.strip().splitlines()[-1]
    env = dict(os.environ, **{IN_VENV: "1"})
    sys.stdout.flush()
    os.execve(py, [py, os.path.abspath(__file__)] + sys.argv[1:], env)


def passage_sets(count, per_set=3):
    """`count` (question, passages) pairs from data/2wiki_sample.jsonl, no passage used twice,
    each passage its text cut to WORDS words (whitespace normalized)."""
    used, sets = set(), []
    with open(ARGS.data) as f:
        for line in f:
            row = json.loads(line)
            texts = []
            for d in row["documents"]:
                t = " ".join(d["text"].split()[:WORDS])
                if t and t not in used and t not in texts:
                    texts.append(t)
                if len(texts) == per_set:
                    break
            if len(texts) == per_set:
                used.update(texts)
                sets.append((row["question"], texts))
            if len(sets) == count:
                return sets
    raise RuntimeError("%s has fewer than %d questions with %d passages" % (ARGS.data, count, per_set))


def usage_dict(u):
    """A usage (openai object or dict) as a dict with prompt_tokens_details' extension fields."""
    if u is None:
        return {}
    if hasattr(u, "model_dump"):
        u = u.model_dump()
    return json.loads(json.dumps(u, default=lambda o: o.model_dump() if hasattr(o, "model_dump") else str(o)))


def details(u):
    d = usage_dict(u).get("prompt_tokens_details") or {}
    return d.get("document_tokens"), d.get("cached_tokens")


class Server:
    """`lazyattn serve --port 0` as a child process; the port comes from its first stdout line."""

    def __init__(self, *flags):
        self.model_id = os.path.basename(ARGS.model)
        self.log = tempfile.NamedTemporaryFile(prefix="lazyattn-serve-", suffix=".log", delete=False)
        # Plain lazy (--quality fast): answers are compared across requests, and the default
        # preset would swap conditioned copies in as its background work finishes.
        cmd = [ARGS.lazyattn, "serve", "--port", "0", "--quality", "fast", "--model", ARGS.model, "--kv-cache-mb", "64",
               "--threads", "2", "--cache-mode", "lazy"] + list(flags)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        first = []
        reader = threading.Thread(target=lambda: first.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(120)
        line = first[0] if first else ""
        if "listening on http://" not in line:
            self.proc.kill()
            raise RuntimeError("server did not start (%s): %r\n%s" % (" ".join(cmd), line, self.stderr_tail()))
        # Keep reading stdout so that the server never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()
        self.port = int(line.split("listening on http://")[1].split()[0].rsplit(":", 1)[1])
        self.base = "http://127.0.0.1:%d" % self.port

    def stderr_tail(self, n=30):
        try:
            with open(self.log.name, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def post(self, path, body):
        req = urllib.request.Request(self.base + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer none"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise AssertionError("POST %s: HTTP %d %s" % (path, e.code, e.read().decode(errors="replace")))

    def metrics(self):
        """/metrics as {name: value summed over its label sets}."""
        with urllib.request.urlopen(self.base + "/metrics", timeout=30) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.split("{", 1)[0].split(" ", 1)[0], line.rsplit(" ", 1)[1]
                out[name] = out.get(name, 0.0) + float(value)
        return out

    def chat(self, messages, **extra):
        """A raw chat request, greedy, MAX_TOKENS: (answer, usage)."""
        body = {"model": self.model_id, "messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS}
        body.update(extra)
        r = self.post("/v1/chat/completions", body)
        return r["choices"][0]["message"]["content"], r["usage"]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        os.unlink(self.log.name)
        return code


# ---------------------------------------------------------------------------------------------
# Each framework, configured as its documentation says (base URL, API key, model, sampling) and
# the one extra setting; each returns [(answer, usage dict, text sent)] for the orders given.

def run_openai_parts(server, question, orders, parts_of=None):
    """The passages as content parts of the last user message, the question the last part."""
    import openai
    client = openai.OpenAI(base_url=server.base + "/v1", api_key="none", max_retries=0, timeout=120)
    parts_of = parts_of or (lambda order: [{"type": "text", "text": p} for p in order])
    out = []
    for order in orders:
        r = client.chat.completions.create(
            model=server.model_id, temperature=0, max_tokens=MAX_TOKENS, extra_body={"documents_from": "parts"},
            messages=[{"role": "user", "content": parts_of(order) + [{"type": "text", "text": question}]}])
        out.append((r.choices[0].message.content, usage_dict(r.usage), None))
    return out


def run_langchain(server, question, orders, extra_body=None):
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.documents import Document
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_openai import ChatOpenAI

    class Recorder(BaseCallbackHandler):
        """The chain answers a string; the usage arrives with the LLM's result."""

        def __init__(self):
            self.usage, self.prompts = None, []

        def on_chat_model_start(self, serialized, messages, **kw):
            self.prompts.append("\n".join(str(m.content) for m in messages[0]))

        def on_llm_end(self, response, **kw):
            msg = getattr(response.generations[0][0], "message", None)
            meta = getattr(msg, "response_metadata", None) or {}
            self.usage = meta.get("token_usage") or (response.llm_output or {}).get("token_usage")

    kw = {"extra_body": extra_body} if extra_body is not None else {}
    llm = ChatOpenAI(base_url=server.base + "/v1", api_key="none", model=server.model_id, temperature=0,
                     max_tokens=MAX_TOKENS, max_retries=0, timeout=120, **kw)
    prompt = ChatPromptTemplate.from_messages([("system", LANGCHAIN_SYSTEM + "\n\n{context}"), ("human", "{input}")])
    chain = create_stuff_documents_chain(llm, prompt)
    out = []
    for order in orders:
        rec = Recorder()
        answer = chain.invoke({"context": [Document(page_content=p) for p in order], "input": question},
                              config={"callbacks": [rec]})
        out.append((answer, usage_dict(rec.usage), "".join(rec.prompts)))
    return out


def run_llamaindex(server, question, orders, additional_kwargs=None):
    from typing import List

    from llama_index.core import Document, Settings, VectorStoreIndex
    from llama_index.core.bridge.pydantic import Field
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.instrumentation import get_dispatcher
    from llama_index.core.instrumentation.event_handlers import BaseEventHandler
    from llama_index.core.instrumentation.events.llm import LLMChatEndEvent
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.llms.openai_like import OpenAILike

    class FixedOrder(BaseNodePostprocessor):
        """MockEmbedding ranks arbitrarily: put the retrieved nodes in the order wanted."""
        order: List[str] = Field(default_factory=list)

        def _postprocess_nodes(self, nodes, query_bundle=None):
            rank = {t: i for i, t in enumerate(self.order)}
            return sorted(nodes, key=lambda n: rank.get(n.node.get_content(), len(rank)))

    class ChatEnds(BaseEventHandler):
        """The query engine answers a Response; the LLM's raw openai response comes with this event."""
        seen: list = Field(default_factory=list)

        @classmethod
        def class_name(cls):
            return "ChatEnds"

        def handle(self, event, **kwargs):
            if isinstance(event, LLMChatEndEvent):
                self.seen.append(event)

    Settings.embed_model = MockEmbedding(embed_dim=8)
    llm = OpenAILike(api_base=server.base + "/v1", api_key="none", model=server.model_id, is_chat_model=True,
                     context_window=8192, max_tokens=MAX_TOKENS, temperature=0, max_retries=0, timeout=120,
                     additional_kwargs=additional_kwargs or {})
    Settings.llm = llm
    docs = [Document(text=p, metadata={}, excluded_llm_metadata_keys=[], excluded_embed_metadata_keys=[])
            for p in orders[0]]
    index = VectorStoreIndex.from_documents(docs)
    handler = ChatEnds()
    dispatcher = get_dispatcher()
    dispatcher.add_event_handler(handler)
    out = []
    try:
        for order in orders:
            handler.seen.clear()
            engine = index.as_query_engine(llm=llm, similarity_top_k=len(order),
                                           node_postprocessors=[FixedOrder(order=list(order))])
            answer = str(engine.query(question))
            assert len(handler.seen) == 1, "expected one chat call per query, got %d" % len(handler.seen)
            ev = handler.seen[0]
            sent = "\n".join(str(m.content) for m in ev.messages)
            out.append((answer, usage_dict(getattr(ev.response.raw, "usage", None)), sent))
    finally:
        dispatcher.event_handlers.remove(handler)
    return out


def run_haystack(server, question, orders, generation_extra=None):
    from haystack import Document, Pipeline
    from haystack.components.builders import ChatPromptBuilder
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage
    from haystack.utils import Secret

    # max_tokens 8 truncates every answer: not worth the generator's warning each time.
    logging.getLogger("haystack.components.generators.chat.openai").setLevel(logging.ERROR)
    kwargs = {"max_tokens": MAX_TOKENS, "temperature": 0}
    kwargs.update(generation_extra or {})
    pipe = Pipeline()
    pipe.add_component("prompt_builder", ChatPromptBuilder(template=[ChatMessage.from_user(HAYSTACK_TEMPLATE)],
                                                           required_variables="*"))
    pipe.add_component("llm", OpenAIChatGenerator(api_base_url=server.base + "/v1", api_key=Secret.from_token("none"),
                                                  model=server.model_id, generation_kwargs=kwargs, timeout=120,
                                                  max_retries=0))
    pipe.connect("prompt_builder.prompt", "llm.messages")
    out = []
    for order in orders:
        res = pipe.run({"prompt_builder": {"documents": [Document(content=p) for p in order], "question": question}},
                       include_outputs_from={"prompt_builder"})
        reply = res["llm"]["replies"][0]
        sent = "\n".join(m.text or "" for m in res["prompt_builder"]["prompt"])
        out.append((reply.text, usage_dict(reply.meta.get("usage")), sent))
    return out


# ---------------------------------------------------------------------------------------------

class Checks:
    server = None
    DOCUMENT_COUNTERS = ("lazyattn_document_lookups_total", "lazyattn_document_misses_total",
                         "lazyattn_segment_job_tokens_total")

    def two_orders(self, case, runner, question, passages, *args):
        """The framework's request with the passages in order A, then in order B (reversed);
        checks that B read them from the cache. Returns both results."""
        a, b = list(passages), list(reversed(passages))
        first = runner(self.server, question, [a], *args)[0]
        before = self.server.metrics()
        second = runner(self.server, question, [b], *args)[0]
        deadline = time.time() + 5  # the counters are published between engine steps
        while True:
            after = self.server.metrics()
            lookups = after.get(self.DOCUMENT_COUNTERS[0], 0) - before.get(self.DOCUMENT_COUNTERS[0], 0)
            if lookups >= len(passages) or time.time() > deadline:
                break
            time.sleep(0.1)
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in self.DOCUMENT_COUNTERS}
        self.check_reuse(case, passages, first, second, delta)
        return first, second

    def check_reuse(self, case, passages, first, second, delta):
        """Both requests: document tokens > 0 and the same; the second reads >= MIN_SHARE of them
        from the cache, more than the first did, and (metrics) computed no document at all; the
        framework's prompts really held the passages in the two orders."""
        (_, u1, sent1), (_, u2, sent2) = first, second
        doc1, cached1 = details(u1)
        doc2, cached2 = details(u2)
        RESULTS.append((case, doc2, cached2))
        self.assertIsNotNone(doc2, "%s: usage.prompt_tokens_details has no document_tokens: %s" % (case, u2))
        self.assertIsNotNone(cached2, "%s: usage.prompt_tokens_details has no cached_tokens: %s" % (case, u2))
        for text, order in ((sent1, passages), (sent2, list(reversed(passages)))):
            if text is not None:  # the framework's prompt holds the passages in this order
                at = [text.find(p) for p in order]
                self.assertTrue(all(a >= 0 for a in at) and at == sorted(at),
                                "%s: the prompt does not hold the passages in order: %r" % (case, text))
        self.assertGreater(doc2, 0, "%s: no document tokens (documents not recognized): %s" % (case, u2))
        self.assertEqual(doc1, doc2, "%s: the same passages gave other document tokens" % case)
        self.assertGreaterEqual(cached2, MIN_SHARE * doc2, "%s: second request: %s" % (case, u2))
        self.assertGreater(cached2, cached1, "%s: the first request already hit: %s then %s" % (case, u1, u2))
        self.assertGreaterEqual(delta["lazyattn_document_lookups_total"], len(passages),
                                "%s: second request: fewer segment lookups than passages: %s" % (case, delta))
        self.assertEqual(delta["lazyattn_document_misses_total"], 0, "%s: second request missed: %s" % (case, delta))
        self.assertEqual(delta["lazyattn_segment_job_tokens_total"], 0,
                         "%s: second request computed documents: %s" % (case, delta))

    def check_same_segments(self, case, question, order, usage):
        """The passages sent through `documents` are the segments the framework's request made."""
        _, raw = self.server.chat([{"role": "user", "content": question}], documents=list(order))
        doc, cached = details(raw)
        self.assertEqual(doc, details(usage)[0], "%s: not the passages' segments: %s vs %s" % (case, raw, usage))
        self.assertGreaterEqual(cached, doc, "%s: documents field missed the framework's segments: %s" % (case, raw))


class FrameworksWithRequestSettingTest(Checks, unittest.TestCase):
    """Each framework sends its documented extra request field."""

    @classmethod
    def setUpClass(cls):
        cls.sets = passage_sets(4)
        cls.server = Server()

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, "server exit code %d" % code

    def test_a_openai_content_parts(self):
        import openai
        client = openai.OpenAI(base_url=self.server.base + "/v1", api_key="none", max_retries=0, timeout=120)
        question, passages = self.sets[0]
        first, second = self.two_orders("openai parts", run_openai_parts, question, passages)
        # The same passages through the `documents` field are the same segments: the same answer.
        b = list(reversed(passages))
        ref = client.chat.completions.create(model=self.server.model_id, temperature=0, max_tokens=MAX_TOKENS,
                                             messages=[{"role": "user", "content": question}],
                                             extra_body={"documents": b})
        self.assertEqual(second[0], ref.choices[0].message.content)
        self.assertEqual(second[1]["prompt_tokens"], ref.usage.prompt_tokens)
        self.assertEqual(details(second[1])[0], details(ref.usage)[0])
        # A part naming a registered document by id is that document.
        pinned = self.server.post("/v1/documents", {"documents": [{"text": passages[0]}]})["data"][0]
        by_id, = run_openai_parts(self.server, question, [passages], lambda order: (
            [{"type": "text", "id": pinned["id"]}] + [{"type": "text", "text": p} for p in order[1:]]))
        by_text, = run_openai_parts(self.server, question, [passages])
        self.assertEqual(by_id[0], by_text[0])
        self.assertEqual(by_id[1]["prompt_tokens"], by_text[1]["prompt_tokens"])
        self.assertEqual(details(by_id[1])[0], details(by_text[1])[0])
        self.assertGreaterEqual(details(by_id[1])[1], pinned["tokens"])

    def test_b_langchain_stuff_documents(self):
        question, passages = self.sets[1]
        extra = {"documents_from": {"source": "delimiter", "message": "system", "delimiter": "\n\n"}}
        results = self.two_orders("langchain", run_langchain, question, passages, extra)
        # The framework's second request is exactly these messages: the same answer, sent raw.
        b = list(reversed(passages))
        answer, usage = self.server.chat([{"role": "system", "content": LANGCHAIN_SYSTEM + "\n\n" + "\n\n".join(b)},
                                          {"role": "user", "content": question}], **extra)
        self.assertEqual(results[1][0], answer)
        self.assertEqual(results[1][1]["prompt_tokens"], usage["prompt_tokens"])
        self.check_same_segments("langchain", question, b, results[1][1])

    def test_c_llamaindex_query_engine(self):
        question, passages = self.sets[2]
        results = self.two_orders("llamaindex", run_llamaindex, question, passages,
                                  {"extra_body": {"document_delimiter": DELIMITER_LLAMAINDEX}})
        self.check_same_segments("llamaindex", question, list(reversed(passages)), results[1][1])

    def test_d_haystack_pipeline(self):
        question, passages = self.sets[3]
        results = self.two_orders("haystack", run_haystack, question, passages,
                                  {"extra_body": {"document_delimiter": DELIMITER_HAYSTACK}})
        self.check_same_segments("haystack", question, list(reversed(passages)), results[1][1])


class ServerWideSettingTest(Checks, unittest.TestCase):
    """e. One server setting covers the frameworks; they send nothing beyond the OpenAI API."""

    @classmethod
    def setUpClass(cls):
        cls.sets = passage_sets(7)[4:]  # not the passages of the cases above
        # The CLI value's \n are newlines to PCRE2 (and the CLI unescapes \n itself for literals).
        cls.server = Server("--document-delimiter", "regex:\\n\\n *|\\n-{21}\\n", "--documents-message", "auto")

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, "server exit code %d" % code

    def test_e1_llamaindex_without_extra_body(self):
        question, passages = self.sets[0]
        self.two_orders("server-wide: llamaindex", run_llamaindex, question, passages)

    def test_e2_haystack_without_extra_body(self):
        question, passages = self.sets[1]
        self.two_orders("server-wide: haystack", run_haystack, question, passages)

    def test_e3_langchain_without_extra_body(self):
        # auto: the last user message (the question) holds no delimiter, so the system message.
        question, passages = self.sets[2]
        self.two_orders("server-wide: langchain", run_langchain, question, passages)

    def test_e4_message_without_delimiter_has_no_documents(self):
        _, usage = self.server.chat([{"role": "user", "content": "What is the capital of Peru?"}])
        self.assertEqual(details(usage)[0], 0, usage)


class UserPromptsTest(Checks, unittest.TestCase):
    """f. Prompts the application writes itself (issue 48): LangChain with a user message that
    begins with "{context}" (its own separator as the delimiter), and a flat prompt whose
    passages the server already knows (documents_from known), both on a reordered retrieval."""

    SEP = "\n\n---\n\n"
    MIN_SHARE_HERE = 0.95

    @classmethod
    def setUpClass(cls):
        cls.sets = passage_sets(9)[7:]  # not the passages of the cases above
        cls.server = Server("--document-delimiter", cls.SEP.replace("\n", "\\n"), "--documents-from",
                            "delimiter+known")

    @classmethod
    def tearDownClass(cls):
        code = cls.server.stop()
        assert code == 0, "server exit code %d" % code

    def second_share(self, case, run, question, passages):
        """The reordered request's document tokens equal the passages' in `documents`, and >= 95%
        of them were served from the cache."""
        b = list(reversed(passages))
        usage = run(b)
        doc, cached = details(usage)
        RESULTS.append((case, doc, cached))
        _, ref = self.server.chat([{"role": "user", "content": question}], documents=b)
        self.assertEqual(doc, details(ref)[0], "%s: not the passages' segments: %s vs %s" % (case, usage, ref))
        self.assertGreaterEqual(cached, self.MIN_SHARE_HERE * doc, "%s: %s" % (case, usage))

    def test_f1_langchain_context_first(self):
        question, passages = self.sets[0]
        template = "{context}" + self.SEP + "Question: {input}"

        def run(order):
            return run_langchain_prompt(self.server, template, self.SEP, question, order)
        run(passages)
        self.second_share("langchain {context}-first", run, question, passages)

    def test_f2_flat_prompt_known_documents(self):
        question, passages = self.sets[1]
        self.server.post("/v1/documents", {"documents": passages})  # the corpus, registered
        template = "Answer the question with these passages. {context}\n\nQuestion: {input}"

        def run(order):
            return run_langchain_prompt(self.server, template, " ", question, order)
        self.second_share("flat prompt, known", run, question, passages)


def run_langchain_prompt(server, template, separator, question, order):
    """LangChain's create_stuff_documents_chain with one user message `template`: the usage."""
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.documents import Document
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_openai import ChatOpenAI

    class Recorder(BaseCallbackHandler):
        def __init__(self):
            self.usage = None

        def on_llm_end(self, response, **kw):
            msg = getattr(response.generations[0][0], "message", None)
            meta = getattr(msg, "response_metadata", None) or {}
            self.usage = meta.get("token_usage") or (response.llm_output or {}).get("token_usage")

    llm = ChatOpenAI(base_url=server.base + "/v1", api_key="none", model=server.model_id, temperature=0,
                     max_tokens=MAX_TOKENS, max_retries=0, timeout=120)
    chain = create_stuff_documents_chain(llm, ChatPromptTemplate.from_messages([("user", template)]),
                                         document_separator=separator)
    rec = Recorder()
    chain.invoke({"context": [Document(page_content=p) for p in order], "input": question},
                 config={"callbacks": [rec]})
    return usage_dict(rec.usage)


def print_table():
    if not RESULTS:
        return
    print("\n%-26s %16s %14s %7s" % ("framework", "document_tokens", "cached_tokens", "share"))
    for case, doc, cached in RESULTS:
        share = "%.0f%%" % (100.0 * cached / doc) if doc and cached is not None else "-"
        print("%-26s %16s %14s %7s" % (case, doc, cached, share))
    print("(the second request of each; share = cached_tokens / document_tokens, over 100% where the\n"
          " chat preamble, which cached_tokens counts too, was cached as well)")
    sys.stdout.flush()


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--lazyattn", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--install-script", required=True)
    parser.add_argument("--data", default=os.path.join(ROOT, "data", "2wiki_sample.jsonl"))
    ARGS, rest = parser.parse_known_args()
    bootstrap(ARGS)
    os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"
    os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    start = time.time()
    prog = unittest.main(argv=[sys.argv[0]] + rest, verbosity=2, exit=False)
    print_table()
    print("[test_rag_frameworks] %.1f s" % (time.time() - start))
    sys.exit(0 if prog.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
