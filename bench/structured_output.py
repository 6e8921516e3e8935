#!/usr/bin/env python3
"""Structured output on a running `lazyattn serve` (docs/benchmarks.md "Structured output"):

- validity: generated JSON schemas of real-world shape (nested objects, arrays with bounds, enums,
  anyOf, $ref, patterns, numeric ranges), each asked at temperature 0 and 0.8; every constrained
  output that ends with `stop` is checked with the `jsonschema` package; the same prompts without
  a constraint for comparison;
- speed: decode tokens/s constrained vs unconstrained, side by side in one run (ignore_eos, a
  constraint that cannot finish early);
- compile: the first request with a new schema vs the same schema again (p50 / p99 of the
  request's wall time with max_tokens 1).

  python3 bench/structured_output.py --url http://127.0.0.1:8080 [--schemas 40]
"""
import argparse, json, random, statistics, time, urllib.request

import jsonschema


def post(url, body):
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t = time.time()
    with urllib.request.urlopen(req, timeout=600) as r:
        return time.time() - t, json.load(r)


def make_schema(rng, i):
    """A schema of one of several real-world shapes; `i` makes each text unique (cold compiles)."""
    shape = i % 6
    tag = f"item{i}"
    if shape == 0:  # a cited answer
        return {"type": "object", "properties": {
            "answer": {"type": "string", "maxLength": 80},
            "passages": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9},
                         "minItems": 1, "maxItems": 3},
            tag: {"type": "boolean"}}, "required": ["answer", "passages", tag]}
    if shape == 1:  # a classification
        return {"type": "object", "properties": {
            "label": {"enum": rng.sample(["positive", "negative", "neutral", "mixed", "unknown"], 3)},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1}, tag: {"type": "integer"}},
            "required": ["label", "confidence"]}
    if shape == 2:  # an extraction with nested objects
        return {"type": "object", "properties": {
            "person": {"type": "object", "properties": {
                "name": {"type": "string", "maxLength": 40},
                "age": {"type": "integer", "minimum": 0, "maximum": 120}}, "required": ["name", "age"]},
            "city": {"type": "string", "pattern": "^[A-Z][a-z]+$"}, tag: {"type": "null"}},
            "required": ["person", "city"]}
    if shape == 3:  # anyOf
        return {"type": "object", "properties": {
            "result": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 1000},
                                 {"type": "string", "enum": ["none", "many"]}]},
            tag: {"type": "string", "maxLength": 10}}, "required": ["result"]}
    if shape == 4:  # $ref
        return {"$defs": {"place": {"type": "object", "properties": {
                    "name": {"type": "string", "maxLength": 30}, "country": {"type": "string", "maxLength": 30}},
                    "required": ["name", "country"]}},
                "type": "object", "properties": {"from": {"$ref": "#/$defs/place"}, "to": {"$ref": "#/$defs/place"},
                                                 tag: {"type": "integer", "minimum": 1}},
                "required": ["from", "to"]}
    return {"type": "object", "properties": {  # arrays of objects with bounds
        "steps": {"type": "array", "minItems": 1, "maxItems": 4, "items": {"type": "object", "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 9}, "text": {"type": "string", "maxLength": 30}},
            "required": ["n", "text"]}}, tag: {"type": "number"}}, "required": ["steps"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--schemas", type=int, default=40)
    ap.add_argument("--max-tokens", type=int, default=160)
    a = ap.parse_args()
    rng = random.Random(0)
    prompt = "Answer about Lima, the capital of Peru, as JSON."
    valid = stopped = total = 0
    free_valid = 0
    cold, warm = [], []
    for i in range(a.schemas):
        schema = make_schema(rng, i)
        for temperature in (0.0, 0.8):
            body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": a.max_tokens,
                    "temperature": temperature, "seed": i,
                    "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}}
            _, r = post(a.url, body)
            total += 1
            c = r["choices"][0]
            if c["finish_reason"] == "stop":
                stopped += 1
                try:
                    jsonschema.validate(json.loads(c["message"]["content"]), schema)
                    valid += 1
                except Exception as e:  # noqa: BLE001 — counted, printed
                    print("INVALID", i, temperature, repr(c["message"]["content"])[:200], str(e)[:200])
            del body["response_format"]
            _, r = post(a.url, body)
            try:
                jsonschema.validate(json.loads(r["choices"][0]["message"]["content"]), schema)
                free_valid += 1
            except Exception:  # noqa: BLE001
                pass
        probe = make_schema(rng, 10_000 + i)
        b = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 1, "temperature": 0, "guided_json": probe}
        cold.append(post(a.url, b)[0] * 1000)
        warm.append(post(a.url, b)[0] * 1000)
    print(f"validity: {valid}/{stopped} constrained outputs that ended with stop validate "
          f"({total - stopped} of {total} cut by max_tokens={a.max_tokens}); unconstrained: {free_valid}/{total}")

    def pct(xs, p):
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]
    print(f"compile (request wall, max_tokens 1): cold p50 {pct(cold, 50):.0f} ms p99 {pct(cold, 99):.0f} ms; "
          f"cached p50 {pct(warm, 50):.0f} ms p99 {pct(warm, 99):.0f} ms")

    base = {"messages": [{"role": "user", "content": "Write a long story about Lima."}], "max_tokens": 200,
            "temperature": 0, "ignore_eos": True}
    story = {"type": "object", "properties": {"story": {"type": "string"}}, "required": ["story"]}
    cases = [("unconstrained", {}), ("json_schema", {"guided_json": story}), ("regex", {"guided_regex": "[a-z ,.]+"})]
    rates = {name: [0.0, 0] for name, _ in cases}
    for _ in range(3):  # interleaved, so load on the machine hits every case alike
        for name, extra in cases:
            dt, r = post(a.url, {**base, **extra})
            rates[name][0] += dt
            rates[name][1] += r["usage"]["completion_tokens"]
    for name, (secs, toks) in rates.items():
        print(f"decode {name:14s} {toks / secs:6.1f} tokens/s ({toks} tokens)")


if __name__ == "__main__":
    main()
