#!/usr/bin/env python3
"""lazyattn against llama.cpp's llama-server over HTTP, on the same RAG token stream.

Starts each server on a free loopback port, replays the stream exported by
`lazyattn bench rag --export-workload FILE` with bench/load/rag_replay.py (same load generator,
same token ids, same HTTP path for both), stops the server, and prints one table; writes a JSON
file and a TTFT plot.

Every server is measured on the same window of the stream: requests [W, W + N) for --warmup W and
--requests N. Before it, lazyattn gets all W warm-up requests (its cache is then in the steady
state the in-process benchmark measures); llama-server gets the last --llama-warmup of them (4 by
default): its reusable state is each slot's last prompt plus what its host-RAM prompt cache holds
(at the budget's MiB, under three 2.6k-token prompts here), so earlier requests cannot change what
it finds, and each one costs it a full prefill.

Servers (same GGUF file, same compute threads):
  lazyattn serve   --cache-mode MODE, the export's KV budget as an exact block count (--kv-blocks)
  llama-server     -np SLOTS, cache_prompt on, optionally --cache-reuse N (chunks of at least N
                   tokens shifted into place from the slot's cache); its KV is sized per slot to hold
                   one request (-c = SLOTS x per-request context), and its host-RAM prompt cache
                   (--cache-ram) gets the export's budget in MiB: llama.cpp has no pool that
                   documents and requests share, so the budget cannot be the same thing on both.

    python3 bench/peer/http_rag_compare.py --workload bench/out/workload.json --warmup 16 --requests 12 \\
        --llama "np=1" "np=4" "np=4,reuse=256" --json bench/out/http_compare.json
"""
import argparse
import json
import os
import re
import socket
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench", "load"))
import child_servers  # noqa: E402
import rag_replay  # noqa: E402


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url, proc, timeout_s=300):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("server exited with %d before it was ready" % proc.returncode)
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as r:
                if r.status == 200:
                    return
        except Exception:  # noqa: BLE001 - not up yet (refused, or 503 while loading)
            pass
        time.sleep(0.5)
    raise RuntimeError("server not healthy after %d s" % timeout_s)


def stop(proc):
    child_servers.stop(proc)


def parse_llama_config(text):
    """'np=4,reuse=256' -> {'np': 4, 'reuse': 256}."""
    cfg = {"np": 1, "reuse": 0}
    for part in filter(None, text.split(",")):
        key, _, value = part.partition("=")
        if key not in cfg:
            raise SystemExit("llama-server config: unknown key %r in %r (np, reuse)" % (key, text))
        cfg[key] = int(value)
    return cfg


def request_context(workload):
    """Tokens one request needs in a llama.cpp slot: the flattened prompt plus its output."""
    return max(sum(len(s) for s in r["segments"]) + len(r["tail"]) + r["max_tokens"] for r in workload["requests"])


def start_lazyattn(args, workload, mode, log):
    port = free_port()
    cmd = [args.lazyattn, "serve", "--host", "127.0.0.1", "--port", str(port), "--model", args.model,
           "--threads", str(args.threads), "--cache-mode", mode, "--kv-blocks", str(workload["kv_budget_blocks"]),
           "--max-tokens-cap", "4096", "--log-level", "warn"]
    return cmd, child_servers.popen(cmd, stdout=log, stderr=log), "http://127.0.0.1:%d" % port


def start_llama(args, workload, cfg, log):
    port = free_port()
    per_slot = request_context(workload) + 64
    cram = max(1, int(round(workload["kv_budget_mib"])))
    cmd = [os.path.join(args.llama_bin, "llama-server"), "-m", args.model, "--host", "127.0.0.1", "--port",
           str(port), "-t", str(args.threads), "-tb", str(args.threads), "-np", str(cfg["np"]),
           "-c", str(per_slot * cfg["np"]), "-b", "2048", "-ub", "512", "--cache-ram", str(cram), "--no-warmup"]
    if cfg["reuse"] > 0:
        cmd += ["--cache-reuse", str(cfg["reuse"])]
    return cmd, child_servers.popen(cmd, stdout=log, stderr=log), "http://127.0.0.1:%d" % port


def window(workload, warmup, measured, server_warmup):
    """The requests one server gets: the last `server_warmup` of the warm-up, then the measured ones."""
    first = warmup - server_warmup
    return dict(workload, requests=workload["requests"][first:warmup + measured], first_request=first)


def run_one(label, server, start, args, workload, warmup, log_path):
    with open(log_path, "w") as log:
        cmd, proc, url = start(log)
        try:
            wait_healthy(url, proc)
            print("== %s: %s" % (label, " ".join(cmd)), flush=True)
            report = rag_replay.replay(url, server, workload, args.clients, args.rate, warmup, args.seed)
        finally:
            stop(proc)
    report["label"], report["command"] = label, cmd
    print("   warm-up %d, measured %d: TTFT p50 %.0f ms [%.0f, %.0f], p99 %.0f ms, %.3f req/s, cached %.0f%% of "
          "prompt tokens, %d errors" % (warmup, report["measured"], report["ttft_p50_ms"], *report["ttft_p50_ci95_ms"],
                                        report["ttft_p99_ms"], report["requests_per_s"],
                                        100 * report["cached_fraction"], report["errors"]), flush=True)
    return report


def print_table(reports):
    base = reports[0]
    print("\n%-34s %9s %17s %9s %8s %7s %9s" % ("server", "TTFT p50", "p50 95% CI", "p99", "req/s", "cached",
                                             "p50 / " + base["label"][:10]))
    for r in reports:
        ci = "[%.0f, %.0f]" % tuple(r["ttft_p50_ci95_ms"])
        print("%-34s %9.0f %17s %9.0f %8.3f %6.0f%% %8.1fx" % (
            r["label"], r["ttft_p50_ms"], ci, r["ttft_p99_ms"], r["requests_per_s"], 100 * r["cached_fraction"],
            r["ttft_p50_ms"] / max(base["ttft_p50_ms"], 1e-9)))
    shas = {r["stream_sha256"] for r in reports}
    print("same token stream for every server: %s (sha256 %s)" % ("yes" if len(shas) == 1 else "NO", min(shas)[:16]))


def plot(reports, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for r in reports:
        v = sorted(r["ttft_ms"])
        ax.step(v, [(i + 1) / len(v) for i in range(len(v))], where="post", label=r["label"])
    ax.set_xscale("log")
    ax.set_xlabel("time to first token over HTTP (ms, log scale)")
    ax.set_ylabel("fraction of measured requests")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print("plot:", path)


def check_inputs(args):
    """Every binary and file the run needs, before minutes are spent benchmarking."""
    problems = []
    for what, path in (("--workload", args.workload), ("--model", args.model)):
        if not os.path.isfile(path) and not path.startswith("synthetic:"):
            problems.append("%s %s: no such file" % (what, path))
    if not os.access(args.lazyattn, os.X_OK):
        problems.append("--lazyattn %s: not an executable (build it: cmake --build build --target lazyattn)"
                        % args.lazyattn)
    if args.llama:
        server = os.path.join(args.llama_bin, "llama-server")
        if not args.llama_bin:
            problems.append("llama-server: set LLAMA_TOOLS_BIN (eval \"$(scripts/build_llama_tools.sh --env)\" after "
                            "scripts/build_llama_tools.sh) or pass --llama-bin DIR, or --llama with no value to "
                            "measure lazyattn alone")
        elif not os.access(server, os.X_OK):
            problems.append("--llama-bin %s: no executable llama-server there (scripts/build_llama_tools.sh builds it)"
                            % args.llama_bin)
    if problems:
        raise SystemExit("http_rag_compare.py: cannot run:\n  " + "\n  ".join(problems))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--warmup", type=int, default=None,
                    help="the measured window starts at this request of the stream (default: the export's warm-up)")
    ap.add_argument("--requests", type=int, default=12, help="requests measured")
    ap.add_argument("--llama-warmup", type=int, default=4, help="warm-up requests llama-server gets (the last ones)")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--rate", type=float, default=0.0, help="Poisson arrivals per second instead of clients")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--lazyattn", default=os.path.join(ROOT, "build", "lazyattn"))
    ap.add_argument("--lazyattn-modes", nargs="*", default=["lazy"], help="cache modes of lazyattn serve")
    ap.add_argument("--llama-bin", default=os.environ.get("LLAMA_TOOLS_BIN", ""),
                    help="folder with llama-server (scripts/build_llama_tools.sh --env prints it)")
    ap.add_argument("--llama", nargs="*", default=["np=1", "np=4", "np=4,reuse=256"],
                    help="llama-server configurations: np=SLOTS[,reuse=MIN_CHUNK]")
    ap.add_argument("--json", help="write every report here")
    ap.add_argument("--plot", help="write the TTFT CDF plot here (PNG)")
    ap.add_argument("--logs", default=None, help="folder for the servers' logs (default: next to --json or /tmp)")
    args = ap.parse_args()
    child_servers.install()

    check_inputs(args)
    workload = rag_replay.load_workload(args.workload)
    if args.warmup is None:
        args.warmup = workload.get("warmup_requests", 0)
    if args.warmup + args.requests > len(workload["requests"]) or args.requests <= 0:
        raise SystemExit("the stream has %d requests: too few for a warm-up of %d and %d measured"
                         % (len(workload["requests"]), args.warmup, args.requests))
    llama_warmup = min(args.llama_warmup, args.warmup)
    logs = args.logs or (os.path.dirname(os.path.abspath(args.json)) if args.json else "/tmp")
    os.makedirs(logs, exist_ok=True)
    print("stream digest %016x: requests %d-%d measured after %d warm-up (llama-server: the last %d), KV budget "
          "%.1f documents = %.1f MiB; %s" % (
        workload.get("digest", 0), args.warmup, args.warmup + args.requests - 1, args.warmup, llama_warmup,
        workload["kv_budget_docs"],
        workload["kv_budget_mib"], "Poisson %.2f req/s" % args.rate if args.rate else "%d clients" % args.clients))
    reports = []
    for mode in args.lazyattn_modes:
        reports.append(run_one("lazyattn serve %s" % mode, "lazyattn",
                               lambda log, m=mode: start_lazyattn(args, workload, m, log), args,
                               window(workload, args.warmup, args.requests, args.warmup), args.warmup,
                               os.path.join(logs, "serve_%s.log" % mode)))
    for text in args.llama:
        cfg = parse_llama_config(text)
        label = "llama-server -np %d%s" % (cfg["np"], ", cache-reuse %d" % cfg["reuse"] if cfg["reuse"] else "")
        log = os.path.join(logs, "llama_np%d_reuse%d.log" % (cfg["np"], cfg["reuse"]))
        reports.append(run_one(label, "llama-server", lambda f, c=cfg: start_llama(args, workload, c, f), args,
                               window(workload, args.warmup, args.requests, llama_warmup), llama_warmup, log))
    print_table(reports)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"workload": {k: v for k, v in workload.items() if k != "requests"}, "reports": reports}, f,
                      indent=1)
    if args.plot:
        plot(reports, args.plot, "HTTP TTFT, same token stream: %d docs x %d tokens, k=%d, zipf %.1f, budget %.1f docs"
             % (workload.get("num_docs", 0), workload.get("doc_tokens", 0), workload.get("k", 0),
                workload.get("zipf_s", 0), workload["kv_budget_docs"]))
    return 0 if all(r["errors"] == 0 for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
