#!/usr/bin/env python3
"""Replays a RAG request stream exported by `lazyattn bench rag --export-workload FILE` against an
HTTP server, and measures what the in-process benchmark measures: TTFT (time to the first streamed
token event), end-to-end latency, steady-state throughput, prompt tokens served from the cache.

The same token ids go to every server, so two servers are compared on the same stream: the report
carries the export's digest and a SHA-256 of the measured requests' token ids (`stream_sha256`). Two
adapters say how a request is sent:

  lazyattn    `lazyattn serve`: POST /v1/completions, each document as {"tokens": [...]} in
              `documents` (so it is cached as a document segment), the question tail as `prompt`
  llama-server  llama.cpp's server: POST /completion with the flattened prompt (documents in
              request order, then the tail) as token ids, `cache_prompt` on

Load: closed-loop clients (each sends its next request when the previous one ended) or open-loop
Poisson arrivals at a given rate (seeded; TTFT counts from the scheduled arrival). The first
`--warmup` requests run but are left out of every statistic. Standard library only; traffic goes to
loopback addresses only.

  python3 bench/load/rag_replay.py --workload bench/out/workload.json --server lazyattn \\
      --url http://127.0.0.1:8080 --clients 4 --warmup 10 --json out.json
"""
import argparse
import hashlib
import http.client
import json
import random
import struct
import sys
import threading
import time
import urllib.parse


def load_workload(path, num_requests=0):
    with open(path) as f:
        w = json.load(f)
    if num_requests:
        w["requests"] = w["requests"][:num_requests]
    return w


def stream_sha256(requests):
    """SHA-256 over the token ids of `requests` (documents in order, then the tail), one by one."""
    h = hashlib.sha256()
    for r in requests:
        for seg in r["segments"]:
            h.update(struct.pack("<%di" % len(seg), *seg))
        h.update(struct.pack("<%di" % len(r["tail"]), *r["tail"]))
        h.update(b"|")
    return h.hexdigest()


def percentile(values, p):
    """Linear interpolation between closest ranks (the C++ benchmark's definition)."""
    if not values:
        return float("nan")
    s = sorted(values)
    pos = p / 100.0 * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def bootstrap_ci(values, p, level=0.95, resamples=2000, seed=1):
    """Percentile-bootstrap interval of the p-th percentile."""
    if not values:
        return [float("nan"), float("nan")]
    rng = random.Random(seed)
    n = len(values)
    est = sorted(percentile([values[rng.randrange(n)] for _ in range(n)], p) for _ in range(resamples))
    tail = 50.0 * (1 - level)
    return [percentile(est, tail), percentile(est, 100 - tail)]


class LazyattnAdapter:
    name = "lazyattn"
    path = "/v1/completions"

    def body(self, r):
        return {"prompt": r["tail"], "documents": [{"tokens": s} for s in r["segments"]],
                "max_tokens": r["max_tokens"], "temperature": 0, "ignore_eos": True, "stream": True,
                "stream_options": {"include_usage": True}}

    def on_event(self, event, out):
        """Returns True when the event carries generated text or tokens (not the usage-only chunk)."""
        if "error" in event:
            raise RuntimeError("stream error: %s" % event["error"])
        if event.get("usage"):
            u = event["usage"]
            out["prompt_tokens"] = u.get("prompt_tokens", 0)
            out["cached_tokens"] = (u.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
            out["completion_tokens"] = u.get("completion_tokens", 0)
        return bool(event.get("choices"))


class LlamaServerAdapter:
    name = "llama-server"
    path = "/completion"

    def body(self, r):
        prompt = [t for s in r["segments"] for t in s] + r["tail"]
        return {"prompt": prompt, "n_predict": r["max_tokens"], "cache_prompt": True, "temperature": 0,
                "ignore_eos": True, "stream": True}

    def on_event(self, event, out):
        if "error" in event:
            raise RuntimeError("stream error: %s" % event["error"])
        if "timings" in event:  # the last event: prompt tokens computed and served from the cache
            t = event["timings"]
            out["completion_tokens"] = t.get("predicted_n", 0)
            out["computed_tokens"] = t.get("prompt_n", 0)
            out["cached_tokens"] = t.get("cache_n", 0)
            out["prompt_tokens"] = out["computed_tokens"] + out["cached_tokens"]
        return not event.get("stop", False)  # every event before the last carries one generated token


ADAPTERS = {"lazyattn": LazyattnAdapter, "llama-server": LlamaServerAdapter}


def send(host, port, adapter, r, start):
    """One streamed request; times from `start` (perf_counter: the scheduled send time)."""
    out = {"ttft": None}
    conn = http.client.HTTPConnection(host, port, timeout=1800)
    try:
        conn.request("POST", adapter.path, json.dumps(adapter.body(r)), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            return {"error": "HTTP %d: %s" % (resp.status, resp.read()[:300].decode("utf-8", "replace"))}
        while True:
            line = resp.readline()
            if not line:
                break
            line = line.strip()
            if not line.startswith(b"data: ") or line[6:] == b"[DONE]":
                continue
            if adapter.on_event(json.loads(line[6:]), out) and out["ttft"] is None:
                out["ttft"] = time.perf_counter() - start
        out["latency"] = time.perf_counter() - start
        out["done_at"] = time.perf_counter()
        if out["ttft"] is None:
            return {"error": "no token was streamed"}
        return out
    except Exception as e:  # noqa: BLE001 - every failure is counted, none stops the run
        return {"error": "%s: %s" % (type(e).__name__, e)}
    finally:
        conn.close()


def run_closed_loop(host, port, adapter, requests, clients):
    results = [None] * len(requests)
    lock, next_index = threading.Lock(), [0]

    def client():
        while True:
            with lock:
                i = next_index[0]
                if i >= len(requests):
                    return
                next_index[0] += 1
            results[i] = send(host, port, adapter, requests[i], time.perf_counter())

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, t0


def run_poisson(host, port, adapter, requests, rate, seed):
    rng = random.Random(seed)
    arrivals, t = [], 0.0
    for _ in requests:
        t += rng.expovariate(rate)
        arrivals.append(t)
    results = [None] * len(requests)
    threads = []
    t0 = time.perf_counter()
    for i, r in enumerate(requests):
        due = t0 + arrivals[i]
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)

        def one(i=i, r=r, due=due):
            results[i] = send(host, port, adapter, r, due)

        th = threading.Thread(target=one, daemon=True)
        th.start()
        threads.append(th)
    for th in threads:
        th.join()
    return results, t0


def summarize(results, warmup, t0):
    ok = [(i, r) for i, r in enumerate(results) if "error" not in r]
    errors = [r["error"] for r in results if "error" in r]
    measured = [r for i, r in ok if i >= warmup]
    ttft = [1000 * r["ttft"] for r in measured]
    e2e = [1000 * r["latency"] for r in measured]
    done = sorted(r["done_at"] - t0 for _, r in ok)
    # Steady-state throughput: completions after the warm-up's last one, over the time they took.
    start = done[warmup - 1] if 0 < warmup <= len(done) else 0.0
    span = done[-1] - start if done else 0.0
    n_after = len(done) - min(warmup, len(done))
    prompt = sum(r.get("prompt_tokens", 0) for r in measured)
    cached = sum(r.get("cached_tokens", 0) for r in measured)
    return {"completed": len(ok), "errors": len(errors), "error_samples": errors[:3], "warmup": warmup,
            "measured": len(measured), "ttft_ms": ttft, "e2e_ms": e2e,
            "prompt_tokens_each": [r.get("prompt_tokens", 0) for r in measured],
            "cached_tokens_each": [r.get("cached_tokens", 0) for r in measured],
            "ttft_mean_ms": sum(ttft) / len(ttft) if ttft else float("nan"),
            "ttft_p50_ms": percentile(ttft, 50), "ttft_p50_ci95_ms": bootstrap_ci(ttft, 50),
            "ttft_p99_ms": percentile(ttft, 99), "e2e_p50_ms": percentile(e2e, 50),
            "requests_per_s": n_after / span if span > 0 else 0.0, "wall_s": done[-1] if done else 0.0,
            "prompt_tokens": prompt, "cached_tokens": cached, "cached_fraction": cached / prompt if prompt else 0.0}


def replay(url, server, workload, clients=4, rate=0.0, warmup=0, seed=1):
    u = urllib.parse.urlparse(url)
    if u.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("refusing to send load to a non-loopback address: %s" % u.hostname)
    requests = workload["requests"]
    if warmup >= len(requests):
        raise SystemExit("the warm-up (%d) must leave requests to measure (%d)" % (warmup, len(requests)))
    adapter = ADAPTERS[server]()
    if rate > 0:
        results, t0 = run_poisson(u.hostname, u.port, adapter, requests, rate, seed)
    else:
        results, t0 = run_closed_loop(u.hostname, u.port, adapter, requests, clients)
    report = summarize(results, warmup, t0)
    report.update({"server": server, "url": url, "clients": 0 if rate > 0 else clients, "rate": rate,
                   "requests": len(requests), "digest": workload.get("digest"),
                   "first_request": workload.get("first_request", 0),
                   "stream_sha256": stream_sha256(requests[warmup:])})  # what was measured
    return report


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", required=True, help="JSON from lazyattn bench rag --export-workload")
    ap.add_argument("--server", choices=sorted(ADAPTERS), required=True)
    ap.add_argument("--url", required=True, help="base URL (loopback only)")
    ap.add_argument("--requests", type=int, default=0, help="the first N requests of the stream (0 = all)")
    ap.add_argument("--clients", type=int, default=4, help="closed-loop clients")
    ap.add_argument("--rate", type=float, default=0.0, help="Poisson arrivals per second (open loop) instead")
    ap.add_argument("--warmup", type=int, default=None, help="requests left out (default: the export's)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the Poisson arrivals")
    ap.add_argument("--json", help="write the report (per-request TTFTs included) here")
    args = ap.parse_args()
    w = load_workload(args.workload, args.requests)
    warmup = args.warmup if args.warmup is not None else min(w.get("warmup_requests", 0), len(w["requests"]) // 2)
    report = replay(args.url, args.server, w, args.clients, args.rate, warmup, args.seed)
    brief = {k: v for k, v in report.items() if not k.endswith(("_ms", "_each")) or k.startswith("ttft_p")}
    print(json.dumps(brief, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0 if report["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
