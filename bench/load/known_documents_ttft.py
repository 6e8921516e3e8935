#!/usr/bin/env python3
"""documents_from known against `documents`: a flat-prompt client in the shape of LMCache's
rag-qa-quality (an instruction, passages joined by one space or by a blank line, the question)
on reordered retrievals from a corpus the server has registered (/v1/documents), against the
same requests with the passages in `documents`. Prints, per way: the median TTFT (streamed, first
content chunk) and the share of document tokens served from the cache. docs/benchmarks.md.

  python3 bench/load/known_documents_ttft.py --lazyattn build/lazyattn \
      --model models/SmolLM2-135M-Instruct.Q4_1.gguf
"""
import argparse
import json
import random
import socket
import statistics
import subprocess
import time
import urllib.request

TOPICS = ["gold", "silver", "copper", "iron", "tin", "lead", "zinc", "nickel", "cobalt", "platinum",
          "mercury", "aluminium", "titanium", "tungsten", "uranium", "lithium", "sodium", "calcium",
          "carbon", "silicon", "sulfur", "argon", "neon", "helium"]
FACTS = ["is mined on every continent but Antarctica", "was known to ancient metallurgists",
         "conducts heat and electricity", "forms stable oxides in air", "is alloyed for strength",
         "is priced on commodity exchanges", "appears in the periodic table's transition block",
         "is recycled from electronic waste", "was refined at industrial scale after 1850",
         "has several stable isotopes", "is essential to some enzymes", "is toxic in large doses"]


def passage(rng, topic):
    return " ".join(f"{topic.capitalize()} {rng.choice(FACTS)}, as survey {rng.randint(1, 999)} records."
                    for _ in range(8))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)


def stream(url, body):
    """(ttft_s, usage) of one streamed chat request."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    t0, ttft, usage = time.perf_counter(), None, None
    with urllib.request.urlopen(req, timeout=300) as r:
        for line in r:
            line = line.strip()
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if ttft is None and chunk.get("choices"):
                ttft = time.perf_counter() - t0
            usage = chunk.get("usage") or usage
    return ttft, usage


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lazyattn", default="build/lazyattn")
    ap.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--corpus", type=int, default=24)
    ap.add_argument("--k", type=int, default=6, help="passages per request")
    ap.add_argument("--requests", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    rng = random.Random(1)
    corpus = [passage(rng, t) for t in TOPICS[:a.corpus]]
    port = free_port()
    server = subprocess.Popen([a.lazyattn, "serve", "--model", a.model, "--port", str(port), "--threads",
                               str(a.threads), "--documents-from", "known"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(base + "/health", timeout=1)
                break
            except Exception:
                time.sleep(0.2)
        post(base + "/v1/documents", {"documents": corpus})  # the precomputed corpus
        url = base + "/v1/chat/completions"
        ways = {"flat, known": [], "flat, none": [], "documents": [], "{context}-first": []}
        sep = "\n\n###\n\n"  # LangChain ("user", "{context}" + SEP + "Question: {q}"), --document-delimiter SEP
        for i in range(a.requests):
            docs = rng.sample(corpus, a.k)  # a retrieval, in its own order
            question = f"Question: which element {rng.choice(FACTS)}?"
            joined = (" " if i % 2 else "\n\n").join(docs)
            flat = "Answer the question using the passages.\n\n" + joined + "\n\n" + question
            common = {"max_tokens": 1, "temperature": 0}
            for way, body in (("flat, known", {"messages": [{"role": "user", "content": flat}]}),
                              ("flat, none", {"messages": [{"role": "user", "content": flat}], "documents_from": "none"}),
                              ("documents", {"messages": [{"role": "user", "content": question}],
                                             "documents": docs}),
                              ("{context}-first", {"messages": [{"role": "user", "content": sep.join(docs) + sep + question}],
                                                   "documents_from": {"source": "delimiter", "delimiter": sep}})):
                ttft, usage = stream(url, dict(common, **body))
                d = usage["prompt_tokens_details"]
                ways[way].append((ttft, d["cached_tokens"], d["document_tokens"], d["computed_tokens"]))
        print(f"{a.requests} requests of {a.k} passages from a registered corpus of {a.corpus} "
              f"(embedded model, {a.threads} threads)")
        for way, rows in ways.items():
            ttft = statistics.median(r[0] for r in rows) * 1e3
            docs = sum(r[2] for r in rows)
            computed = sum(r[3] for r in rows)
            # Every prompt token that ran is counted in computed_tokens, so documents - computed
            # is a lower bound on the document tokens the cache served (the tail always runs).
            print(f"  {way:16s} TTFT median {ttft:6.1f} ms   document tokens {docs:6d}   computed {computed:5d}"
                  + (f"   cached >= {100.0 * (docs - computed) / docs:.1f}% of document tokens" if docs else ""))
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
