#!/usr/bin/env python3
"""Structured output, lazyattn serve against llama.cpp's llama-server (docs/benchmarks.md §14).

The script starts every server itself (child_servers: they die with it), one at a time, each
with the same threads, and asks each the same requests:

- validity (the embedded model): --schemas JSON schemas of real-world shape from a seeded
  generator (make_schema: cited answers with bounded arrays, enum classifications with number
  ranges, nested extractions with string patterns, anyOf, $ref/$defs, arrays of objects, optional
  and nullable fields, formats, const, nested arrays), each asked once constrained
  (response_format json_schema) at temperature 0 or 0.8 (alternating); every output that ends
  with `stop` is checked with the `jsonschema` package. The same prompts unconstrained (lazyattn)
  for comparison;
- compile (the embedded model): the wall time of a request with max_tokens 1 and a schema no
  request used before (cold), then the same schema again (cached); p50 / p99, and the same
  request without a schema for the floor;
- speed (the embedded model and a 1B-shape synthetic model, --synthetic-model, a GGUF from
  build/tools/la_make_synthetic_model both servers load): decode tokens/s unconstrained, under a
  JSON schema around an open string, one whose string cannot close before max_tokens
  (minLength), and a GBNF grammar that never ends, ignore_eos, timed from the first streamed
  text to the end, the cases interleaved round by round so load on the machine hits each alike.

  python3 bench/structured_output.py --lazyattn build/lazyattn \\
      --llama-bin "$LLAMA_TOOLS_BIN" --model models/SmolLM2-135M-Instruct.Q4_1.gguf \\
      --synthetic-model /tmp/synth-1b.q4_0.gguf [--schemas 200] [--threads 2]
"""
import argparse
import json
import os
import random
import socket
import statistics
import sys
import time
import urllib.error
import urllib.request

import jsonschema

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "load"))
import child_servers  # noqa: E402

PROMPTS = [
    "Answer about Lima, the capital of Peru, as JSON.",
    "Describe the river Rhone as JSON.",
    "Give the details of a book you like as JSON.",
    "Summarize a trip from Lyon to Paris as JSON.",
]
WORDS = ["name", "title", "city", "score", "label", "items", "author", "year", "tags", "note", "kind", "value",
         "start", "end", "country", "price", "status", "owner", "reason", "source"]


# --- the schemas --------------------------------------------------------------------------------

def make_schema(rng, i):
    """One schema of a real-world shape (API responses, extraction, classification); `i` makes
    each text unique so that its first request compiles it."""
    tag = f"x{i}"
    k1, k2, k3 = rng.sample(WORDS, 3)
    shape = i % 10
    if shape == 0:  # a cited answer
        return obj({"answer": {"type": "string", "maxLength": rng.choice([60, 80, 120])},
                    "passages": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9},
                                 "minItems": 1, "maxItems": rng.choice([2, 3, 5])},
                    tag: {"type": "boolean"}}, ["answer", "passages", tag])
    if shape == 1:  # a classification
        labels = rng.sample(["positive", "negative", "neutral", "mixed", "unknown", "spam", "other"], rng.randint(2, 5))
        return obj({"label": {"enum": labels}, "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    tag: {"type": "integer", "minimum": -5, "maximum": 5}}, ["label", "confidence"])
    if shape == 2:  # an extraction with nested objects and a pattern
        return obj({"person": obj({"name": {"type": "string", "maxLength": 40},
                                   "age": {"type": "integer", "minimum": 0, "maximum": 120}}, ["name", "age"]),
                    k1: {"type": "string", "pattern": "^[A-Z][a-z]+$"}, tag: {"type": "null"}}, ["person", k1])
    if shape == 3:  # anyOf
        return obj({"result": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 1000},
                                         {"type": "string", "enum": ["none", "many"]}]},
                    tag: {"type": "string", "maxLength": 10}}, ["result"])
    if shape == 4:  # $ref
        place = obj({"name": {"type": "string", "maxLength": 30}, "country": {"type": "string", "maxLength": 30}},
                    ["name", "country"])
        s = obj({"from": {"$ref": "#/$defs/place"}, "to": {"$ref": "#/$defs/place"},
                 tag: {"type": "integer", "minimum": 1}}, ["from", "to"])
        s["$defs"] = {"place": place}
        return s
    if shape == 5:  # arrays of objects with bounds
        return obj({"steps": {"type": "array", "minItems": 1, "maxItems": rng.choice([3, 4]),
                              "items": obj({"n": {"type": "integer", "minimum": 1, "maximum": 9},
                                            "text": {"type": "string", "maxLength": 30}}, ["n", "text"])},
                    tag: {"type": "number"}}, ["steps"])
    if shape == 6:  # optional and nullable fields, a number range with exclusive bounds
        return obj({k1: {"type": "string", "maxLength": 40}, k2: {"type": ["string", "null"], "maxLength": 20},
                    k3: {"type": "number", "exclusiveMinimum": 0, "maximum": 100},
                    tag: {"type": "boolean"}}, [k1, k3])
    if shape == 7:  # formats and const (an API envelope)
        return obj({"version": {"const": 1}, "date": {"type": "string", "format": "date"},
                    "id": {"type": "string", "pattern": "^[a-z]{2}-[0-9]{3}$"},
                    k1: {"type": "string", "maxLength": 30}, tag: {"type": "integer"}}, ["version", "date", "id", k1])
    if shape == 8:  # nested arrays: a table
        return obj({"columns": {"type": "array", "items": {"type": "string", "maxLength": 12}, "minItems": 2,
                                "maxItems": 3},
                    "rows": {"type": "array", "maxItems": 2, "items": {"type": "array", "minItems": 2, "maxItems": 3,
                                                                       "items": {"type": "integer", "minimum": 0,
                                                                                 "maximum": 99}}},
                    tag: {"type": "string", "maxLength": 8}}, ["columns", "rows"])
    # a tagged union through $ref and anyOf (events)
    s = obj({"event": {"anyOf": [{"$ref": "#/$defs/click"}, {"$ref": "#/$defs/view"}]}, tag: {"type": "boolean"}},
            ["event"])
    s["$defs"] = {"click": obj({"type": {"const": "click"}, "x": {"type": "integer", "minimum": 0, "maximum": 1920}},
                               ["type", "x"]),
                  "view": obj({"type": {"const": "view"}, "page": {"type": "string", "maxLength": 30}},
                              ["type", "page"])}
    return s


def obj(properties, required):
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


# --- servers ------------------------------------------------------------------------------------

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, kind, cmd, url, log):
        self.kind, self.url = kind, url
        self.proc = child_servers.popen(cmd, stdout=log, stderr=log)
        deadline = time.time() + 600
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %d before it was ready: %s" % (kind, self.proc.returncode, cmd))
            try:
                with urllib.request.urlopen(url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.5)
        raise RuntimeError("%s not healthy after 600 s" % kind)

    def post(self, body):
        """(wall seconds, answer or None, error text)."""
        req = urllib.request.Request(self.url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        t = time.time()
        try:
            with urllib.request.urlopen(req, timeout=900) as r:
                return time.time() - t, json.load(r), ""
        except urllib.error.HTTPError as e:
            return time.time() - t, None, "%d %s" % (e.code, e.read()[:300].decode("utf-8", "replace"))

    def decode_seconds(self, body):
        """Streams `body`: seconds from the first generated text to the end (the decode, without
        the prompt and a constraint's compile), or raises with the server's refusal."""
        req = urllib.request.Request(self.url + "/v1/chat/completions", data=json.dumps(dict(body, stream=True)).encode(),
                                     headers={"Content-Type": "application/json"})
        first = None
        try:
            with urllib.request.urlopen(req, timeout=900) as r:
                for line in r:
                    if first is None and line.startswith(b"data: {") and b'"content":"' in line:
                        first = time.time()
        except urllib.error.HTTPError as e:
            raise RuntimeError("%s: %d %s" % (self.kind, e.code, e.read()[:300].decode("utf-8", "replace")))
        return time.time() - (first or time.time())

    def stop(self):
        child_servers.stop(self.proc)


def start(kind, args, model, log):
    port = free_port()
    url = "http://127.0.0.1:%d" % port
    if kind == "lazyattn":
        cmd = [args.lazyattn, "serve", "--host", "127.0.0.1", "--port", str(port), "--model", model,
               "--threads", str(args.threads), "--log-level", "warn"]
    else:
        cmd = [os.path.join(args.llama_bin, "llama-server"), "-m", model, "--host", "127.0.0.1", "--port", str(port),
               "-t", str(args.threads), "-tb", str(args.threads), "-np", "1", "-c", "4096", "--no-warmup"]
    return Server(kind, cmd, url, log)


def constrained(schema):
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}}


# --- the measurements ---------------------------------------------------------------------------

def validity(server, schemas, max_tokens, free):
    """Constrained (and, when `free`, unconstrained) outputs checked against their schemas."""
    r = {"valid": 0, "stopped": 0, "total": 0, "errors": 0, "free_valid": 0, "free_total": 0, "invalid": []}
    for i, schema in enumerate(schemas):
        body = {"messages": [{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}], "max_tokens": max_tokens,
                "temperature": 0.0 if i % 2 == 0 else 0.8, "seed": i, "response_format": constrained(schema)}
        _, ans, err = server.post(body)
        r["total"] += 1
        if ans is None:
            r["errors"] += 1
            r["invalid"].append((i, "refused: " + err))
        elif ans["choices"][0]["finish_reason"] == "stop":
            r["stopped"] += 1
            text = ans["choices"][0]["message"]["content"]
            try:
                jsonschema.validate(json.loads(text), schema)
                r["valid"] += 1
            except Exception as e:  # noqa: BLE001 - counted and shown
                r["invalid"].append((i, "%r: %s" % (text[:120], str(e).splitlines()[0][:160])))
        if (i + 1) % 10 == 0:  # a run cut short still says how far it got
            print("    %s: %d schemas, %d valid of %d ended with stop" % (server.kind, i + 1, r["valid"], r["stopped"]),
                  flush=True)
        if free:
            del body["response_format"]
            _, ans, _ = server.post(body)
            r["free_total"] += 1
            try:
                jsonschema.validate(json.loads(ans["choices"][0]["message"]["content"]), schema)
                r["free_valid"] += 1
            except Exception:  # noqa: BLE001
                pass
    return r


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def compile_times(server, rng, n):
    """Request wall time (ms) with max_tokens 1: a new schema, the same schema again, no schema."""
    cold, warm, floor = [], [], []
    for i in range(n):
        schema = make_schema(rng, 100_000 + i)
        b = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 1, "temperature": 0}
        floor.append(server.post(b)[0] * 1000)
        b["response_format"] = constrained(schema)
        cold.append(server.post(b)[0] * 1000)
        warm.append(server.post(b)[0] * 1000)
    return cold, warm, floor


# The JSON a RAG answer streams: an object around an open string (with ignore_eos a server must
# keep to the grammar after the document is complete, stop tokens only); and one whose string
# cannot close within the tokens asked (minLength; llama-server refuses repetitions past 2000),
# a grammar state XGrammar's mask is slow to compute for.
STORY = {"type": "object", "properties": {"story": {"type": "string"}}, "required": ["story"]}
LONG_STORY = {"type": "object", "properties": {"story": {"type": "string", "minLength": 1800}}, "required": ["story"]}
SPEED_CASES = [("unconstrained", {}), ("json_schema", {"response_format": constrained(STORY)}),
               ("json_schema minLength 1800", {"response_format": constrained(LONG_STORY)}),
               ("grammar", {"grammar": 'root ::= [a-z ,.]+'})]


def speed(server, tokens, rounds):
    """Decode tokens/s per case: with ignore_eos every request generates `tokens`; the rate is
    tokens - 1 over the time from the first streamed text to the end (the same clock for both
    servers), summed over the rounds. One round first, not counted, compiles the constraints. A
    case the server fails is reported with its error."""
    base = {"messages": [{"role": "user", "content": "Write a long story about Lima."}], "max_tokens": tokens,
            "temperature": 0, "ignore_eos": True}
    sums = {name: [0.0, 0] for name, _ in SPEED_CASES}
    failed = {}
    for r in range(rounds + 1):
        for name, extra in SPEED_CASES:
            if name in failed:
                continue
            try:
                secs = server.decode_seconds({**base, **extra})
            except Exception as e:  # noqa: BLE001 - reported in the line
                failed[name] = str(e).splitlines()[0][:160]
                continue
            if r > 0:
                sums[name][0] += secs
                sums[name][1] += tokens - 1
    return {name: (failed[name] if name in failed else toks / secs, toks) for name, (secs, toks) in sums.items()}


def speed_line(rates):
    base = rates["unconstrained"][0]
    out = []
    for name, (rate, _) in rates.items():
        if isinstance(rate, str):
            out.append("%s FAILED (%s)" % (name, rate))
        elif name == "unconstrained":
            out.append("%s %.1f" % (name, rate))
        else:
            out.append("%s %.1f (%.0f%%)" % (name, rate, 100 * rate / base))
    return ", ".join(out)


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lazyattn", default="build/lazyattn")
    ap.add_argument("--llama-bin", default=os.environ.get("LLAMA_TOOLS_BIN", ""),
                    help="folder with llama-server (scripts/build_llama_tools.sh --env prints it); '' skips it")
    ap.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--synthetic-model", default="", help="a 1B-shape GGUF (la_make_synthetic_model); '' skips it")
    ap.add_argument("--schemas", type=int, default=200, help="validity schemas (0: skip validity)")
    ap.add_argument("--compile-schemas", type=int, default=40, help="compile-time schemas (0: skip)")
    ap.add_argument("--max-tokens", type=int, default=160)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=160, help="decode tokens per speed request (embedded model)")
    ap.add_argument("--synthetic-tokens", type=int, default=32, help="the same for the synthetic model")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--servers", default="lazyattn,llama-server", help="which to run, in order")
    ap.add_argument("--log", default="/tmp/structured_output_servers.log")
    a = ap.parse_args()
    child_servers.install()
    kinds = [k for k in a.servers.split(",") if k == "lazyattn" or (k == "llama-server" and a.llama_bin)]
    rng = random.Random(0)
    schemas = [make_schema(rng, i) for i in range(a.schemas)]
    print("load average at start %s; %d schemas (seed 0), max_tokens %d, %d threads" %
          (loadavg(), len(schemas), a.max_tokens, a.threads), flush=True)
    with open(a.log, "w") as log:
        for kind in kinds:
            t0 = time.time()
            server = start(kind, a, a.model, log)
            if schemas:
                v = validity(server, schemas, a.max_tokens, free=(kind == "lazyattn"))
                line = "%-12s validity: %d/%d constrained outputs that ended with stop validate (%d of %d cut by " \
                       "max_tokens, %d refused)" % (kind, v["valid"], v["stopped"],
                                                    v["total"] - v["stopped"] - v["errors"], v["total"], v["errors"])
                if v["free_total"]:
                    line += "; unconstrained %d/%d validate" % (v["free_valid"], v["free_total"])
                print(line, flush=True)
                for i, why in v["invalid"][:8]:
                    print("    schema %d: %s" % (i, why))
            if a.compile_schemas:
                cold, warm, floor = compile_times(server, random.Random(1), a.compile_schemas)
                print("%-12s compile (request wall, max_tokens 1, %d schemas): new schema p50 %.0f ms p99 %.0f ms; "
                      "same schema again p50 %.0f ms p99 %.0f ms; no schema p50 %.0f ms" %
                      (kind, len(cold), pct(cold, 50), pct(cold, 99), pct(warm, 50), pct(warm, 99), pct(floor, 50)),
                      flush=True)
            s = speed(server, a.tokens, a.rounds)
            print("%-12s decode tokens/s, embedded model, %d x %d tokens: %s" %
                  (kind, a.rounds, a.tokens, speed_line(s)), flush=True)
            server.stop()
            if a.synthetic_model:
                server = start(kind, a, a.synthetic_model, log)
                s = speed(server, a.synthetic_tokens, a.rounds)
                print("%-12s decode tokens/s, 1B-shape synthetic, %d x %d tokens: %s" %
                      (kind, a.rounds, a.synthetic_tokens, speed_line(s)), flush=True)
                server.stop()
            print("%-12s done in %.0f s, load average %s" % (kind, time.time() - t0, loadavg()), flush=True)


if __name__ == "__main__":
    main()
