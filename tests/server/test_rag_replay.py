#!/usr/bin/env python3
"""The HTTP RAG benchmark's load generator (bench/load/rag_replay.py) against a real
`lazyattn serve` on a synthetic model, with the stream `lazyattn bench rag --export-workload`
writes: every request completes, the warm-up is left out, the server sees exactly the exported
prompt (its prompt_tokens), documents sent as token segments come back as cached tokens (never more
than the prompt), closed-loop clients and Poisson arrivals both work, and the ids sent hash the same
on every replay. Run by CTest (bench_rag_replay_http).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench", "load"))
import rag_replay  # noqa: E402

ARGS = None


class ReplayAgainstLazyattn(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        model = os.path.join(cls.tmp.name, "synthetic.gguf")
        subprocess.run([ARGS.write_model, model, "1024"], check=True)
        cls.workload_path = os.path.join(cls.tmp.name, "stream.json")
        # 6 documents of 32 tokens, k = 2, 8 requests of which 2 are warm-up; the budget holds all.
        subprocess.run([ARGS.lazyattn, "bench", "rag", "--model", model, "--threads", "1", "--docs", "6",
                        "--doc-tokens", "32", "--k", "2", "--tail-tokens", "8", "--output-tokens", "3",
                        "--requests", "8", "--warmup-requests", "2", "--kv-budget-docs", "20", "--modes", "lazy",
                        "--no-floor", "--data", os.path.join(ROOT, "data", "2wiki_sample.jsonl"),
                        "--export-workload", cls.workload_path], check=True, stdout=subprocess.DEVNULL)
        cls.workload = rag_replay.load_workload(cls.workload_path)
        cls.server = subprocess.Popen(
            [ARGS.lazyattn, "serve", "--port", "0", "--model", model, "--threads", "1", "--kv-blocks",
             str(cls.workload["kv_budget_blocks"]), "--log-level", "warn"], stdout=subprocess.PIPE, text=True)
        line = cls.server.stdout.readline()
        if "listening on http://" not in line:
            raise RuntimeError("server did not start: %r" % line)
        cls.url = line.split("listening on ")[1].split()[0]

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(timeout=30)
        cls.tmp.cleanup()

    def check_report(self, report):
        w = self.workload
        self.assertEqual(report["errors"], 0, report["error_samples"])
        self.assertEqual(report["completed"], 8)
        self.assertEqual(report["warmup"], 2)
        self.assertEqual(report["measured"], 6)
        self.assertEqual(len(report["ttft_ms"]), 6)
        self.assertTrue(all(t > 0 for t in report["ttft_ms"]))
        self.assertTrue(all(e >= t for e, t in zip(report["e2e_ms"], report["ttft_ms"])))
        lo, hi = report["ttft_p50_ci95_ms"]
        self.assertLessEqual(lo, report["ttft_p50_ms"])
        self.assertGreaterEqual(hi, report["ttft_p50_ms"])
        self.assertGreater(report["requests_per_s"], 0)
        # The server ran exactly the exported prompts (documents, then the tail; the synthetic
        # model adds no BOS), and served no more cached tokens than each prompt has.
        expected = [sum(len(s) for s in r["segments"]) + len(r["tail"]) for r in w["requests"][2:]]
        self.assertEqual(report["prompt_tokens_each"], expected)
        for cached, prompt in zip(report["cached_tokens_each"], report["prompt_tokens_each"]):
            self.assertLessEqual(cached, prompt)
        self.assertGreater(report["cached_tokens"], 0)  # documents were cached as segments and reused
        self.assertEqual(report["digest"], w["digest"])

    def test_closed_loop(self):
        report = rag_replay.replay(self.url, "lazyattn", self.workload, clients=3, warmup=2)
        self.check_report(report)
        self.assertEqual(report["clients"], 3)
        again = rag_replay.replay(self.url, "lazyattn", self.workload, clients=1, warmup=2)
        self.assertEqual(again["stream_sha256"], report["stream_sha256"])
        # Every document is cached by now: all of each measured prompt but the question tail.
        tails = [len(r["tail"]) for r in self.workload["requests"][2:]]
        for cached, prompt, tail in zip(again["cached_tokens_each"], again["prompt_tokens_each"], tails):
            self.assertGreaterEqual(cached, prompt - tail)

    def test_poisson_arrivals(self):
        report = rag_replay.replay(self.url, "lazyattn", self.workload, rate=20.0, warmup=2, seed=3)
        self.check_report(report)
        self.assertEqual(report["clients"], 0)
        self.assertEqual(report["rate"], 20.0)

    def test_refuses_remote_targets_and_a_warmup_without_measurements(self):
        with self.assertRaises(SystemExit):
            rag_replay.replay("http://192.0.2.1:80", "lazyattn", self.workload)
        with self.assertRaises(SystemExit):
            rag_replay.replay(self.url, "lazyattn", self.workload, warmup=8)

    def test_llama_server_request_is_the_flattened_prompt(self):
        r = self.workload["requests"][0]
        body = rag_replay.LlamaServerAdapter().body(r)
        self.assertEqual(body["prompt"], [t for s in r["segments"] for t in s] + r["tail"])
        self.assertTrue(body["cache_prompt"])
        self.assertEqual(body["n_predict"], r["max_tokens"])
        out = {}
        self.assertTrue(rag_replay.LlamaServerAdapter().on_event({"content": "a", "stop": False}, out))
        self.assertFalse(rag_replay.LlamaServerAdapter().on_event(
            {"content": "", "stop": True, "timings": {"prompt_n": 10, "cache_n": 90, "predicted_n": 3}}, out))
        self.assertEqual((out["prompt_tokens"], out["cached_tokens"]), (100, 90))


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--lazyattn", required=True)
    parser.add_argument("--write-model", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
