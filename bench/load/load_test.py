#!/usr/bin/env python3
"""Load test for `lazyattn serve`: N concurrent streaming clients send a fixed number of RAG chat
requests whose documents are drawn from a shared pool (the passages of data/2wiki_sample.jsonl).

Reports errors (must be 0), TTFT p50/p99 (time to the first streamed event, which the server sends
with the first token), end-to-end latency, throughput (requests/s, generated tokens/s), prompt
tokens served from the cache, and checks /metrics at the end: no request running or queued and no
KV block held. Exits 1 if any of that fails.

Plain http.client + threads (no third-party packages). Traffic goes only to the given loopback URL.

  # against a running server
  python3 bench/load/load_test.py --url http://127.0.0.1:8080 --clients 64 --requests 1000 --max-tokens 8
  # or let it start `lazyattn serve` itself (and stop it with SIGTERM at the end)
  python3 bench/load/load_test.py --serve build/lazyattn --serve-args "--kv-cache-mb 1024"
"""
import argparse
import http.client
import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

import child_servers  # bench/load: servers stopped with this script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_pool(path):
    """Questions and the deduplicated pool of their passages."""
    questions, pool, seen = [], [], set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            questions.append(row["question"])
            for d in row["documents"]:
                key = (d["title"], d["text"])
                if key not in seen:
                    seen.add(key)
                    pool.append({"title": d["title"], "text": d["text"]})
    return questions, pool


def percentile(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))
    return s[k]


class Client(threading.Thread):
    """One streaming client: takes request numbers from the shared counter until none are left."""

    def __init__(self, host, port, model, plan, counter, results, max_tokens):
        super().__init__(daemon=True)
        self.host, self.port, self.model = host, port, model
        self.plan, self.counter, self.results, self.max_tokens = plan, counter, results, max_tokens
        self.conn = None

    def run(self):
        while True:
            i = self.counter.take()
            if i is None:
                break
            r = self.one(i)
            r["index"] = i
            self.results.append(r)
        if self.conn:
            self.conn.close()

    def connection(self):
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=600)
        return self.conn

    def one(self, i):
        question, docs = self.plan[i]
        body = json.dumps({"model": self.model, "messages": [{"role": "user", "content": question}],
                           "documents": docs, "max_tokens": self.max_tokens, "temperature": 0, "stream": True,
                           "stream_options": {"include_usage": True}})
        for attempt in range(2):  # a kept-alive connection the server closed meanwhile: reconnect once
            t0 = time.perf_counter()
            try:
                conn = self.connection()
                conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
                resp = conn.getresponse()
                return self.read_stream(resp, t0)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as e:
                if self.conn:
                    self.conn.close()
                self.conn = None
                if attempt == 1:
                    return {"error": "%s: %s" % (type(e).__name__, e)}
            except Exception as e:  # noqa: BLE001 - every failure is counted, none stops the run
                if self.conn:
                    self.conn.close()
                self.conn = None
                return {"error": "%s: %s" % (type(e).__name__, e)}

    def read_stream(self, resp, t0):
        if resp.status != 200:
            return {"error": "HTTP %d: %s" % (resp.status, resp.read()[:300].decode("utf-8", "replace"))}
        ttft, usage, finish, done, text = None, None, None, False, ""
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data: "):
                continue
            if ttft is None:
                ttft = time.perf_counter() - t0
            payload = line[6:]
            if payload == b"[DONE]":
                done = True
                continue
            chunk = json.loads(payload)
            if "error" in chunk:
                return {"error": "stream error: %s" % chunk["error"].get("message")}
            if chunk.get("usage"):
                usage = chunk["usage"]
            for c in chunk.get("choices", []):
                text += c.get("delta", {}).get("content") or ""
                finish = c.get("finish_reason") or finish
        latency = time.perf_counter() - t0
        if not done or finish is None or usage is None:
            return {"error": "incomplete stream (done=%s finish=%s usage=%s)" % (done, finish, usage is not None)}
        return {"ttft": ttft, "latency": latency, "usage": usage, "finish": finish, "text": text}


class Counter:
    def __init__(self, n):
        self.n, self.next, self.lock = n, 0, threading.Lock()

    def take(self):
        with self.lock:
            if self.next >= self.n:
                return None
            self.next += 1
            return self.next - 1


def get(host, port, path):
    conn = http.client.HTTPConnection(host, port, timeout=30)
    conn.request("GET", path)
    resp = conn.getresponse()
    data = resp.read().decode("utf-8", "replace")
    conn.close()
    return resp.status, data


def metric(text, name):
    """The value of an unlabelled series (every series carries a model_name label, ignored here)."""
    m = re.search(r"^%s(?:\{model_name=\"(?:[^\"\\]|\\.)*\"\})? (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


def check_metrics(host, port, timeout_s=10.0):
    """Waits for the pool to settle; returns the final gauges."""
    deadline = time.time() + timeout_s
    while True:
        _, text = get(host, port, "/metrics")
        g = {k: metric(text, "lazyattn_" + k) for k in
             ("kv_blocks_used", "kv_blocks_cached", "kv_blocks_free", "kv_blocks_total", "num_requests_running",
              "num_requests_waiting", "num_preemptions_total", "document_hits_total", "document_misses_total",
              "prefix_cache_hits_total", "prefix_cache_queries_total")}
        if (g["kv_blocks_used"] == 0 and g["num_requests_running"] == 0 and g["num_requests_waiting"] == 0) or time.time() > deadline:
            return g
        time.sleep(0.2)


def start_server(binary, extra):
    cmd = [binary, "serve", "--port", "0"] + shlex.split(extra)
    proc = child_servers.popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on (http://\S+)", line)
    if not m:
        proc.kill()
        raise SystemExit("server did not start: %r" % line)
    print("started: %s" % " ".join(cmd), file=sys.stderr)
    return proc, m.group(1)


def plan_requests(args):
    questions, pool = load_pool(args.data)
    rng = random.Random(args.seed)
    plan = [(rng.choice(questions), rng.sample(pool, args.docs_per_request)) for _ in range(args.requests)]
    return plan, len(pool)


def run(args, url):
    u = urllib.parse.urlparse(url)
    host, port = u.hostname, u.port or 80
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("refusing to load-test a non-loopback address: %s" % host)
    status, models = get(host, port, "/v1/models")
    model = json.loads(models)["data"][0]["id"]
    plan, pool_size = plan_requests(args)
    results, counter = [], Counter(args.requests)
    clients = [Client(host, port, model, plan, counter, results, args.max_tokens) for _ in range(args.clients)]
    t0 = time.perf_counter()
    for c in clients:
        c.start()
        time.sleep(0.002)  # the listen backlog is short: do not open 64 connections in one instant
    for c in clients:
        c.join()
    wall = time.perf_counter() - t0
    gauges = check_metrics(host, port)
    return summarize(args, model, pool_size, results, wall, gauges)


def summarize(args, model, pool_size, results, wall, gauges):
    ok = [r for r in results if "error" not in r]
    errors = [r["error"] for r in results if "error" in r]
    ttft = [r["ttft"] for r in ok]
    # The first wave meets a cold cache (every document computed once); later requests show the
    # steady state.
    warm_ttft = [r["ttft"] for r in ok if r["index"] >= args.clients]
    lat = [r["latency"] for r in ok]
    gen = sum(r["usage"]["completion_tokens"] for r in ok)
    prompt = sum(r["usage"]["prompt_tokens"] for r in ok)
    cached = sum(r["usage"].get("prompt_tokens_details", {}).get("cached_tokens", 0) for r in ok)
    report = {
        "model": model, "clients": args.clients, "requests": args.requests, "max_tokens": args.max_tokens,
        "docs_per_request": args.docs_per_request, "document_pool": pool_size,
        "completed": len(ok), "errors": len(errors), "error_samples": errors[:5], "wall_s": round(wall, 2),
        "requests_per_s": round(len(ok) / wall, 2), "generated_tokens_per_s": round(gen / wall, 1),
        "prompt_tokens_per_s": round(prompt / wall, 1),
        "ttft_p50_ms": round(1000 * percentile(ttft, 50), 1), "ttft_p99_ms": round(1000 * percentile(ttft, 99), 1),
        "warm_ttft_p50_ms": round(1000 * percentile(warm_ttft, 50), 1),
        "warm_ttft_p99_ms": round(1000 * percentile(warm_ttft, 99), 1),
        "latency_p50_ms": round(1000 * percentile(lat, 50), 1), "latency_p99_ms": round(1000 * percentile(lat, 99), 1),
        "prompt_tokens": prompt, "cached_prompt_tokens": cached,
        "cached_fraction": round(cached / prompt, 3) if prompt else 0.0,
        "final_metrics": gauges,
    }
    report["pool_clean"] = gauges["kv_blocks_used"] == 0 and gauges["num_requests_running"] == 0 and gauges["num_requests_waiting"] == 0
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="server base URL (loopback only); default: start one with --serve")
    ap.add_argument("--serve", default=os.path.join(ROOT, "build", "lazyattn"), help="lazyattn binary to start")
    ap.add_argument("--serve-args", default="--kv-cache-mb 1024", help="extra `lazyattn serve` flags")
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--max-tokens", type=int, default=8)
    ap.add_argument("--docs-per-request", type=int, default=4)
    ap.add_argument("--data", default=os.path.join(ROOT, "data", "2wiki_sample.jsonl"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="also write the report to this file")
    args = ap.parse_args()
    child_servers.install()

    proc = None
    url = args.url
    if url is None:
        proc, url = start_server(args.serve, args.serve_args)
    try:
        report = run(args, url)
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
            print("server exited with %d" % code, file=sys.stderr)
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0 if report["errors"] == 0 and report["pool_clean"] else 1


if __name__ == "__main__":
    sys.exit(main())
