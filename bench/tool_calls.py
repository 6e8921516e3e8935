#!/usr/bin/env python3
"""Tool calls: the share of replies that parse into valid OpenAI tool_calls (docs/benchmarks.md §14).

The script starts `lazyattn serve` itself (child_servers: it dies with the script) once per chat
template family, all with the same weights (the embedded SmolLM2-135M-Instruct by default), and
asks each the same --requests requests: a user question that one of four tools answers
(search_passages, get_weather, convert_currency, lookup_author), the four tools offered, at
temperature 0 or 0.8 (alternating, seeded), once with tool_choice "auto" and once with "required".

A reply counts as a valid call when message.tool_calls is non-empty, every call names an offered
function and its arguments parse as a JSON object valid against that function's parameters
(checked with the `jsonschema` package). The table: per family and choice, valid calls / requests,
and for auto the replies that answered in text instead (a model may rightly answer without a
call), with the mean wall time per request.

Families, each the template that selects it (server/tool_calls/tool_format.h):
  smollm2  the model file's own template (renders no tools: the system-message fallback)
  hermes   --chat-template chatml (the native ChatML renderer)
  llama3   --chat-template llama3
  mistral  --chat-template mistral-v7
  phi      --chat-template granite (its template writes <|tool_call|>)
  qwen2.5  llama.cpp's Qwen-Qwen2.5-7B-Instruct.jinja (renders tools itself; hermes family),
           when the llama.cpp sources are on disk (--templates-dir)

  python3 bench/tool_calls.py --lazyattn build/lazyattn --model models/SmolLM2-135M-Instruct.Q4_1.gguf \\
      [--requests 100] [--threads 2] [--families smollm2,hermes,llama3,mistral,phi,qwen2.5]
"""
import argparse
import json
import os
import random
import socket
import sys
import time
import urllib.error
import urllib.request

import jsonschema

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "load"))
import child_servers  # noqa: E402

TOOLS = [
    {"type": "function", "function": {
        "name": "search_passages", "description": "Search the document library for passages about a topic.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "maxLength": 80},
            "k": {"type": "integer", "minimum": 1, "maximum": 10}}, "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "get_weather", "description": "The current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "maxLength": 40},
            "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "convert_currency", "description": "Convert an amount between two currencies.",
        "parameters": {"type": "object", "properties": {
            "amount": {"type": "number", "minimum": 0},
            "from": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "to": {"type": "string", "pattern": "^[A-Z]{3}$"}}, "required": ["amount", "from", "to"]}}},
    {"type": "function", "function": {
        "name": "lookup_author", "description": "Who wrote a book.",
        "parameters": {"type": "object", "properties": {"title": {"type": "string", "maxLength": 80}},
                       "required": ["title"]}}},
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}

QUESTIONS = [
    "Find passages about {topic} in the library.",
    "What is the weather like in {city} right now?",
    "Convert {amount} {a} to {b}.",
    "Who wrote the book '{book}'?",
]
TOPICS = ["lazy attention", "the Inca empire", "river deltas", "KV caches", "the French revolution", "photosynthesis"]
CITIES = ["Lima", "Paris", "Nairobi", "Osaka", "Quito", "Oslo"]
BOOKS = ["Dune", "Middlemarch", "The Trial", "Beloved", "Ficciones"]
CURRENCIES = ["USD", "EUR", "PEN", "JPY", "KES"]

FAMILIES = {
    "smollm2": [],
    "hermes": ["--chat-template", "chatml"],
    "llama3": ["--chat-template", "llama3"],
    "mistral": ["--chat-template", "mistral-v7"],
    "phi": ["--chat-template", "granite"],
    "qwen2.5": ["--chat-template", "{templates}/Qwen-Qwen2.5-7B-Instruct.jinja"],
}


def question(rng):
    kind = rng.randrange(4)
    return QUESTIONS[kind].format(topic=rng.choice(TOPICS), city=rng.choice(CITIES), amount=rng.randint(2, 900),
                                  a=rng.choice(CURRENCIES), b=rng.choice(CURRENCIES), book=rng.choice(BOOKS))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args, extra, log):
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    cmd = [args.lazyattn, "serve", "--host", "127.0.0.1", "--port", str(port), "--model", args.model,
           "--threads", str(args.threads), "--log-level", "warn"] + extra
    proc = child_servers.popen(cmd, stdout=log, stderr=log)
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("lazyattn exited with %d before it was ready: %s" % (proc.returncode, cmd))
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    return proc, url
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.5)
    raise RuntimeError("lazyattn not healthy after 300 s")


def post(url, body):
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.load(r), ""
    except urllib.error.HTTPError as e:
        return None, "%d %s" % (e.code, e.read()[:300].decode("utf-8", "replace"))


def valid_calls(message):
    calls = message.get("tool_calls") or []
    if not calls:
        return False
    for c in calls:
        name = c.get("function", {}).get("name")
        if c.get("type") != "function" or name not in SCHEMAS:
            return False
        try:
            args = json.loads(c["function"]["arguments"])
            jsonschema.validate(args, SCHEMAS[name])
        except (ValueError, jsonschema.ValidationError):
            return False
    return True


def run_family(url, n, max_tokens, seed):
    rng = random.Random(seed)
    rows = {}
    for choice in ("auto", "required"):
        valid = text = errors = 0
        t0 = time.time()
        for i in range(n):
            body = {"messages": [{"role": "user", "content": question(rng)}], "tools": TOOLS, "tool_choice": choice,
                    "max_tokens": max_tokens, "temperature": 0.0 if i % 2 == 0 else 0.8, "seed": i}
            r, err = post(url, body)
            if r is None:
                errors += 1
                print("  error:", err, file=sys.stderr)
                continue
            msg = r["choices"][0]["message"]
            if valid_calls(msg):
                valid += 1
            elif not msg.get("tool_calls"):
                text += 1
        rows[choice] = {"valid": valid, "text": text, "errors": errors, "n": n, "s_per_req": (time.time() - t0) / n}
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lazyattn", default="build/lazyattn")
    ap.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--requests", type=int, default=100, help="requests per family and tool_choice")
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--templates-dir", default=".llama-tools/llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates")
    ap.add_argument("--seed", type=int, default=59)
    ap.add_argument("--log", default="/tmp/tool_calls_servers.log")
    ap.add_argument("--json", default="", help="also write the rows here")
    args = ap.parse_args()
    results = {}
    with open(args.log, "a") as log:
        for family in args.families.split(","):
            extra = [a.format(templates=args.templates_dir) for a in FAMILIES[family]]
            if any(a.endswith(".jinja") and not os.path.exists(a) for a in extra):
                print("skipping %s: %s is absent" % (family, extra[-1]), file=sys.stderr)
                continue
            proc, url = start(args, extra, log)
            try:
                results[family] = run_family(url, args.requests, args.max_tokens, args.seed)
            finally:
                child_servers.stop(proc)
            print(family, json.dumps(results[family]), file=sys.stderr)
    print("| family (template) | auto: valid calls | auto: text answers | required: valid calls | s / request (auto, required) |")
    print("|---|---|---|---|---|")
    total = {"auto": [0, 0], "required": [0, 0]}
    for family, rows in results.items():
        a, r = rows["auto"], rows["required"]
        for k in total:
            total[k][0] += rows[k]["valid"]
            total[k][1] += rows[k]["n"]
        print("| %s | %d / %d | %d | %d / %d | %.2f, %.2f |" % (family, a["valid"], a["n"], a["text"], r["valid"], r["n"],
                                                          a["s_per_req"], r["s_per_req"]))
    if results:
        print("| all | %d / %d (%.0f%%) | | %d / %d (%.0f%%) | |" % (
            total["auto"][0], total["auto"][1], 100.0 * total["auto"][0] / max(1, total["auto"][1]),
            total["required"][0], total["required"][1], 100.0 * total["required"][0] / max(1, total["required"][1])))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
