"""Training data for the block fine-tuning recipe, from what this machine has.

The default mix takes no sample from `bench quality`'s generators (kv/hop/agg in
src/bench/quality_tasks.cpp) nor its held-out families. Sources, all written as render-input
JSONL (la_rag_layout render lays them out exactly as the engine lays out a request):

  2wiki        the 2WikiMultihopQA sample (data/2wiki_sample.jsonl), split by a fixed rule into
               a train part and a held-out part: a question is held out when the first byte of
               the SHA-256 of its text is odd. Only train questions (with their passages) are
               trained on; bench quality asks all 14 and scripts/finetune/report.py leaves the
               train ones out. The documents of a train question are shuffled per repeat.
  prose-task   reading questions over prose shipped with the OS and Python (prose_tasks.py:
               Python's language reference topics, Debian's license texts), train half of the
               passages only, templates that share no sentence shape with the benchmark's;
               one template has no answer (the distillation objective uses the teacher's reply).
  user         --data FILE.jsonl: one {"question", "documents", "answer"?} per line, documents
               as strings or {"title", "text"}, optional "system"; replaces the built-in RAG
               samples (or is added to them with --data-mix). A line without an answer is
               kept for --objective distill and mix (the teacher's reply is its target).
  synthetic    only with --synthetic N > 0 (default 0): bench quality's own kv/hop/agg families
               for seeds from --synthetic-seed, filler from the train passages; questions that
               also occur in the benchmark's seed-1 suite are dropped. This is the earlier
               recipe's data (docs/benchmarks.md section 9); it fits the benchmark's shapes.
  prose        plain text (the train 2Wiki passages and train prose passages, in runs of about
               --prose-words words), scored on every token under full attention.

Held-out evaluation files written beside the samples: heldout_prose.jsonl (2Wiki passages that
no train question retrieves: perplexity), heldout_prompts.jsonl (the held-out 2Wiki questions
and reading questions over the held-out prose passages: KL(full || lazy)).
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess

import prose_tasks

SYSTEM = "Answer the question using the documents. Reply with a short answer only."


def read_jsonl(path):
    return [obj for _, obj in read_jsonl_numbered(path)]


def read_jsonl_numbered(path):
    """[(line number, object)], blank lines skipped (and counted)."""
    out = []
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise SystemExit(f"error: cannot read {path}: {e.strerror}")
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append((n, json.loads(line)))
            except json.JSONDecodeError as e:
                raise SystemExit(f"error: {path}:{n}: not JSON ({e})")
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


def check_rag_sample(s, where, answer_required=True):
    if not isinstance(s, dict):
        raise SystemExit(f"error: {where}: not a JSON object")
    if not isinstance(s.get("question"), str) or not s["question"].strip():
        raise SystemExit(f"error: {where}: no \"question\" (a non-empty string)")
    if not isinstance(s.get("documents"), list) or not s["documents"]:
        raise SystemExit(f"error: {where}: no \"documents\" (a non-empty list)")
    for d in s["documents"]:
        if not (isinstance(d, str) or (isinstance(d, dict) and isinstance(d.get("text"), str))):
            raise SystemExit(f"error: {where}: a document must be a string or {{\"title\", \"text\"}}")
    if s.get("answer") is None:
        if answer_required:
            raise SystemExit(f"error: {where}: no \"answer\" (--objective sft trains on answers; "
                             "distill and mix use the teacher's reply)")
    elif not isinstance(s["answer"], str) or not s["answer"].strip():
        raise SystemExit(f"error: {where}: the answer is empty")


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
    """Writes samples.jsonl (render input, with "kind" and "source" per line) and the held-out
    files; returns a summary dict."""
    rng = random.Random(args.seed)
    answer_required = args.objective == "sft"
    items = read_jsonl(args.wiki)
    for n, q in enumerate(items, 1):
        check_rag_sample({**q, "answer": (q.get("answers") or [""])[0]}, f"{args.wiki}:{n}")
    train, held = split_2wiki(items)
    write_jsonl(os.path.join(out_dir, "2wiki_train.jsonl"), train)
    write_jsonl(os.path.join(out_dir, "2wiki_heldout.jsonl"), held)
    write_jsonl(os.path.join(out_dir, "heldout_prose.jsonl"), heldout_prose(train, held))
    passages = prose_tasks.passages(args.prose_task_words) if args.prose_tasks or args.prose_share else []
    p_train, p_held = prose_tasks.split(passages)

    rag = []
    if args.data:
        for n, s in read_jsonl_numbered(args.data):
            check_rag_sample(s, f"{args.data}:{n}", answer_required)
            rag.append({"system": s.get("system", SYSTEM), "documents": s["documents"], "question": s["question"],
                        "answer": s.get("answer"), "kind": "user", "source": f"{args.data}:{n}"})
    dropped, last_seed, no_answer_skipped = 0, None, 0
    if not args.data or args.data_mix:
        wiki_line = {q["question"]: n for n, q in enumerate(items, 1)}
        for q in train:
            for _ in range(args.wiki_repeats):
                docs = list(q["documents"])
                rng.shuffle(docs)
                rag.append({"system": SYSTEM, "documents": docs, "question": q["question"],
                            "answer": q["answers"][0], "kind": "2wiki",
                            "source": f"{args.wiki}:{wiki_line[q['question']]}"})
        if args.prose_tasks:
            for n, t in enumerate(prose_tasks.tasks(p_train, args.prose_tasks, args.doc_counts, rng,
                                                    max_words=args.max_prompt_words)):
                if t["answer"] is None and answer_required:
                    no_answer_skipped += 1
                    continue
                rag.append({"system": SYSTEM, "documents": t["documents"], "question": t["question"],
                            "answer": t["answer"], "kind": "prose-task/" + t["template"],
                            "source": f"prose task {n} ({t['template']})"})
        if args.synthetic:
            dropped, last_seed = _synthetic(args, layout_bin, out_dir, rag)
    # Never train on a question that the evaluation asks: the held-out 2Wiki questions.
    held_q = {q["question"] for q in held}
    leaked = [s["source"] for s in rag if s["question"] in held_q]
    if leaked:
        raise SystemExit(f"error: {leaked[0]}: a held-out 2Wiki question is in the training data; "
                         "remove it (bench quality evaluates on it)")
    rng.shuffle(rag)
    # A share of the RAG samples is trained under full attention (what `none` computes), and
    # prose runs are added on top: the model stays good without documents.
    n_full = int(round(args.full_attention_share * len(rag)))
    for s in rag[:n_full]:
        s["attention"] = "full"
    for s in rag[n_full:]:
        s["attention"] = "block"
    prose = prose_runs(train, args.prose_words, rng) + prose_runs([{"documents": p_train}], args.prose_words, rng)
    n_prose = int(round(args.prose_share * len(rag)))
    prose_samples = [dict(prose[i % len(prose)], kind="prose", attention="full", source=f"prose run {i % len(prose)}")
                     for i in range(n_prose)] if prose else []
    samples = rag + prose_samples
    rng.shuffle(samples)
    write_jsonl(os.path.join(out_dir, "samples.jsonl"), samples)

    # Held-out prompts for KL(full || lazy): the held-out 2Wiki questions and reading questions
    # (with answers) over the held-out prose passages.
    prompts = [{"system": SYSTEM, "documents": q["documents"], "question": q["question"], "answer": q["answers"][0],
                "kind": "2wiki"} for q in held]
    if p_held:
        for t in prose_tasks.tasks(p_held, args.heldout_prompts, args.doc_counts, random.Random(args.seed + 7),
                                   templates=prose_tasks.TEMPLATES[:3], max_words=args.max_prompt_words):
            prompts.append({"system": SYSTEM, "documents": t["documents"], "question": t["question"],
                            "answer": t["answer"], "kind": "prose-task/" + t["template"]})
    write_jsonl(os.path.join(out_dir, "heldout_prompts.jsonl"), prompts)
    kinds = {}
    for s in samples:
        kinds[s["kind"]] = kinds.get(s["kind"], 0) + 1
    return {"samples": len(samples), "rag": len(rag), "full_attention_rag": n_full, "prose": len(prose_samples),
            "kinds": kinds, "no_answer_skipped_for_sft": no_answer_skipped,
            "prose_passages": {"train": len(p_train), "heldout": len(p_held)},
            "wiki_train_questions": [q["question"] for q in train],
            "wiki_heldout_questions": [q["question"] for q in held],
            "synthetic_seeds": [args.synthetic_seed, last_seed] if args.synthetic else None,
            "dropped_as_benchmark": dropped}


def _synthetic(args, layout_bin, out_dir, rag):
    """bench quality's own families (opt-in): seeds other than the benchmark's, its questions dropped."""
    bench = synthetic_tasks(layout_bin, args.wiki, out_dir, 1, 486, 1000, None)
    bench_keys = {(t["question"], t["answer"]) for t in bench}
    os.remove(os.path.join(out_dir, "tasks_seed1.jsonl"))
    corpus = os.path.join(out_dir, "2wiki_train.jsonl")
    dropped, made, seed = 0, 0, args.synthetic_seed
    while made < args.synthetic:
        if seed == 1:
            seed += 1
        tasks = synthetic_tasks(layout_bin, corpus, out_dir, seed, 240, args.max_prompt_words, args.doc_counts)
        os.remove(os.path.join(out_dir, f"tasks_seed{seed}.jsonl"))
        for t in tasks:
            if (t["question"], t["answer"]) in bench_keys:
                dropped += 1
                continue
            rag.append({"system": SYSTEM, "documents": t["documents"], "question": t["question"],
                        "answer": t["answer"], "kind": "synthetic/" + t["family"], "source": f"synthetic seed {seed}"})
            made += 1
            if made >= args.synthetic:
                break
        seed += 1
    return dropped, seed - 1
