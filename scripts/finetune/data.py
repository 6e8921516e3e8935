"""Training data for the block fine-tuning recipe, from what this machine has.

Three sources, all written as render-input JSONL (la_rag_layout render lays them out exactly as
the engine lays out a request):

  2wiki      the 2WikiMultihopQA sample (data/2wiki_sample.jsonl), split by a fixed rule into a
             train part and a held-out part: a question is held out when the first byte of the
             SHA-256 of its text is odd. Only train questions are trained on; the held-out ones
             are what the evaluation reports on (bench quality's 2Wiki group, less the train
             questions). The documents of a train question are shuffled per epoch.
  synthetic  `bench quality`'s multi-document task families (kv, hop, agg; la_rag_layout tasks,
             the benchmark's own generator) for seeds from --synthetic-seed on (default 1000;
             the benchmark uses seed 1), with filler prose from the train passages only. Any
             generated question that also occurs in the benchmark's seed-1 suite is dropped
             (none has in practice; the count is printed).
  prose      plain text (the train passages, in runs of about --prose-words words), scored on
             every token under full attention: keeps the model a language model.

A user's own data (--data FILE.jsonl: one {"question", "documents", "answer"} per line,
documents as strings or {"title", "text"}, optionally "system") replaces the built-in RAG
samples (or is added to them with --data-mix).

Held-out prose for perplexity: the passages of held-out questions that no train question
retrieves (heldout_prose.jsonl).
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess

SYSTEM = "Answer the question using the documents. Reply with a short answer only."


def read_jsonl(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"error: {path}: line {n} is not JSON ({e})")
    return out


def write_jsonl(path, rows):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def is_held_out(question: str) -> bool:
    return hashlib.sha256(question.encode("utf-8")).digest()[0] % 2 == 1


def split_2wiki(items):
    train = [q for q in items if not is_held_out(q["question"])]
    held = [q for q in items if is_held_out(q["question"])]
    return train, held


def passage_key(p):
    return (p.get("title", ""), p.get("text", ""))


def heldout_prose(train, held):
    seen = {passage_key(p) for q in train for p in q["documents"]}
    out, used = [], set()
    for q in held:
        for p in q["documents"]:
            k = passage_key(p)
            if k not in seen and k not in used:
                used.add(k)
                out.append({"text": (p["title"] + "\n" if p.get("title") else "") + p["text"]})
    return out


def prose_runs(items, words_per_run, rng):
    passages = list({passage_key(p): p for q in items for p in q["documents"]}.values())
    rng.shuffle(passages)
    runs, cur, n = [], [], 0
    for p in passages:
        text = (p["title"] + "\n" if p.get("title") else "") + p["text"]
        cur.append(text)
        n += len(text.split())
        if n >= words_per_run:
            runs.append({"text": "\n\n".join(cur)})
            cur, n = [], 0
    if cur:
        runs.append({"text": "\n\n".join(cur)})
    return runs


def check_rag_sample(s, where):
    for key in ("question", "documents", "answer"):
        if key not in s:
            raise SystemExit(f"error: {where}: no \"{key}\"")
    if not isinstance(s["answer"], str) or not s["answer"].strip():
        raise SystemExit(f"error: {where}: the answer is empty")
    if not isinstance(s["documents"], list) or not s["documents"]:
        raise SystemExit(f"error: {where}: no documents")


def synthetic_tasks(layout_bin, corpus_path, out_dir, seed, questions, max_prompt_words, doc_counts):
    path = os.path.join(out_dir, f"tasks_seed{seed}.jsonl")
    cmd = [layout_bin, "tasks", corpus_path, path, "--seed", str(seed), "--questions", str(questions)]
    if max_prompt_words:
        cmd += ["--max-prompt-words", str(max_prompt_words)]
    if doc_counts:
        cmd += ["--doc-counts"] + [str(k) for k in doc_counts]
    if subprocess.run(cmd).returncode != 0:
        raise SystemExit(f"error: la_rag_layout tasks failed for seed {seed}")
    return read_jsonl(path)


def build(args, layout_bin, out_dir):
    """Writes samples.jsonl (render input, with a "kind" per line) and the split files; returns a
    summary dict."""
    rng = random.Random(args.seed)
    items = read_jsonl(args.wiki)
    for n, q in enumerate(items, 1):
        check_rag_sample({**q, "answer": (q.get("answers") or [""])[0]}, f"{args.wiki}: line {n}")
    train, held = split_2wiki(items)
    write_jsonl(os.path.join(out_dir, "2wiki_train.jsonl"), train)
    write_jsonl(os.path.join(out_dir, "2wiki_heldout.jsonl"), held)
    write_jsonl(os.path.join(out_dir, "heldout_prose.jsonl"), heldout_prose(train, held))

    rag = []
    if args.data:
        for n, s in enumerate(read_jsonl(args.data), 1):
            check_rag_sample(s, f"{args.data}: line {n}")
            rag.append({"system": s.get("system", SYSTEM), "documents": s["documents"],
                        "question": s["question"], "answer": s["answer"], "kind": "user"})
    if not args.data or args.data_mix:
        for q in train:
            for _ in range(args.wiki_repeats):
                docs = list(q["documents"])
                rng.shuffle(docs)
                rag.append({"system": SYSTEM, "documents": docs, "question": q["question"],
                            "answer": q["answers"][0], "kind": "2wiki"})
        # The benchmark's questions, to make sure none is trained on.
        bench = synthetic_tasks(layout_bin, args.wiki, out_dir, 1, 486, 1000, None)
        bench_keys = {(t["question"], t["answer"]) for t in bench}
        os.remove(os.path.join(out_dir, "tasks_seed1.jsonl"))
        corpus = os.path.join(out_dir, "2wiki_train.jsonl")
        dropped = 0
        per_seed = 240
        seed = args.synthetic_seed
        made = 0
        while made < args.synthetic:
            if seed == 1:
                seed += 1
            tasks = synthetic_tasks(layout_bin, corpus, out_dir, seed, per_seed, args.max_prompt_words,
                                    args.doc_counts)
            os.remove(os.path.join(out_dir, f"tasks_seed{seed}.jsonl"))
            for t in tasks:
                if (t["question"], t["answer"]) in bench_keys:
                    dropped += 1
                    continue
                rag.append({"system": SYSTEM, "documents": t["documents"], "question": t["question"],
                            "answer": t["answer"], "kind": "synthetic/" + t["family"]})
                made += 1
                if made >= args.synthetic:
                    break
            seed += 1
        last_seed = seed - 1
    else:
        dropped, last_seed = 0, None
    rng.shuffle(rag)
    # A share of the RAG samples is trained under full attention (what `none` computes), and
    # prose runs are added on top: the model stays good without documents.
    n_full = int(round(args.full_attention_share * len(rag)))
    for s in rag[:n_full]:
        s["attention"] = "full"
    for s in rag[n_full:]:
        s["attention"] = "block"
    prose = prose_runs(train, args.prose_words, rng)
    n_prose = int(round(args.prose_share * len(rag)))
    prose_samples = [dict(prose[i % len(prose)], kind="prose", attention="full") for i in range(n_prose)] if prose else []
    samples = rag + prose_samples
    rng.shuffle(samples)
    write_jsonl(os.path.join(out_dir, "samples.jsonl"), samples)
    return {"samples": len(samples), "rag": len(rag), "full_attention_rag": n_full, "prose": len(prose_samples),
            "wiki_train_questions": [q["question"] for q in train],
            "wiki_heldout_questions": [q["question"] for q in held],
            "synthetic_seeds": [args.synthetic_seed, last_seed], "dropped_as_benchmark": dropped}
