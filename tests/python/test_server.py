"""The Python API answers a request as `lazyattn serve` does: the installed command starts the real
server on a free port, and the same greedy request goes to both."""

import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest

from conftest import THREADS

REQUEST = {
    "messages": [{"role": "user", "content": "Where do the Rhone and the Saone meet? Answer briefly."}],
    "documents": [
        "Lyon is a city in France where the Rhone and the Saone rivers meet.",
        "The Rhone flows from the Swiss Alps through Lyon to the Mediterranean Sea.",
    ],
    "max_tokens": 40,
    "temperature": 0.0,
    "seed": 7,
}


def lazyattn_command():
    return os.path.join(os.path.dirname(sys.executable), "lazyattn")


@pytest.fixture(scope="module")
def server():
    # Plain lazy on both sides (conftest's LLM too): the comparison needs the same reads, and the
    # default preset swaps conditioned copies in as its background work finishes.
    proc = subprocess.Popen(
        [lazyattn_command(), "serve", "--port", "0", "--quality", "fast", "--threads", str(THREADS), "--log-level", "warn"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = None
    deadline = time.monotonic() + 120
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        m = re.search(r"listening on (http://[\d.]+:\d+)", line)
        if m:
            url = m.group(1)
            break
    if url is None:
        proc.kill()
        pytest.fail("lazyattn serve did not start:\n" + "".join(lines))
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


def post(url, path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as res:
        return json.loads(res.read())


def test_python_answer_equals_the_servers(llm, server):
    answer = post(server, "/v1/chat/completions", REQUEST)
    choice = answer["choices"][0]
    args = {k: v for k, v in REQUEST.items() if k != "messages"}
    out = llm.generate(REQUEST["messages"], **args)
    assert out.text == choice["message"]["content"]
    assert out.finish_reason == choice["finish_reason"]
    usage = answer["usage"]
    assert out.usage.prompt_tokens == usage["prompt_tokens"]
    assert out.usage.completion_tokens == usage["completion_tokens"]
    assert out.usage.document_tokens == usage["prompt_tokens_details"]["document_tokens"]


def test_completion_answer_equals_the_servers(llm, server):
    body = {"prompt": "Lyon lies where two rivers meet: the", "max_tokens": 12, "temperature": 0}
    answer = post(server, "/v1/completions", body)
    out = llm.generate(body["prompt"], max_tokens=12)
    assert out.text == answer["choices"][0]["text"]
    assert out.usage.prompt_tokens == answer["usage"]["prompt_tokens"]
