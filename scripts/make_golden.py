#!/usr/bin/env python3
"""Regenerates the llama.cpp reference ("golden") files in tests/data/ for SmolLM2-135M-Instruct Q4_1.

    scripts/install_llama_cpp.sh            # once: llama-cpp-python 0.3.36 (source build, ~15 min)
    python3 scripts/make_golden.py [--model PATH] [--out DIR] [--check]

Writes (deterministic: a second run gives byte-identical files; --check verifies that instead of
writing, exit 1 on any difference):
  golden_tokens.json  tokenizer ids for the texts in scripts/golden_texts.py
  golden_logits.json  top-20 (id, logit) at every position of 5 prompts, one eval with logits_all
  golden_greedy.json  greedy 48-token continuations of 4 raw and 4 chat prompts

llama.cpp runs on the CPU with 2 threads; logits are rounded to 4 decimals. lazyattn never links
llama.cpp: this script and bench/peer/ only use the PyPI package as an external reference.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from golden_texts import TEXTS  # noqa: E402

MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
N_THREADS = 2
N_CTX = 2048
TOP_K = 20
GREEDY_TOKENS = 48
GREEDY_TOP = 5
ROUND = 4

# ----------------------------------------------------------------------------------------------
# Prompts

LOGIT_PROMPTS = [
    ("prose",
     "Once upon a time, in a small village nestled between rolling hills and a quiet river, there "
     "lived an old clockmaker named Elias. Every morning he opened the shutters of his workshop, "
     "brewed a pot of strong black tea, and sat down at his bench to repair the watches that the "
     "villagers brought him. Some were family heirlooms, passed from grandparents to grandchildren; "
     "others were cheap trinkets bought at the market fair. Elias treated them all with the same "
     "patience. One winter evening, a stranger knocked on his door carrying a clock unlike any he "
     "had ever seen: its face showed not hours but seasons, and its single hand moved backwards."),
    ("rag",
     "Use the documents below to answer the question.\n\n"
     "Document 1: The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, "
     "France. It is named after the engineer Gustave Eiffel, whose company designed and built the "
     "tower for the 1889 World's Fair. It is 330 metres tall.\n\n"
     "Document 2: The Statue of Liberty is a colossal neoclassical sculpture on Liberty Island in "
     "New York Harbor. The copper statue, a gift from the people of France, was designed by "
     "Frédéric Auguste Bartholdi and its metal framework was built by Gustave Eiffel. It was "
     "dedicated on October 28, 1886.\n\n"
     "Question: Which engineer worked on both monuments, and which one was finished first?\n"
     "Answer:"),
    ("code",
     "def binary_search(items, target):\n"
     "    \"\"\"Return the index of target in the sorted list items, or -1.\"\"\"\n"
     "    lo, hi = 0, len(items) - 1\n"
     "    while lo <= hi:\n"
     "        mid = (lo + hi) // 2\n"
     "        if items[mid] == target:\n"
     "            return mid\n"
     "        if items[mid] < target:\n"
     "            lo = mid + 1\n"
     "        else:\n"
     "            hi = mid - 1\n"
     "    return -1\n\n\n"
     "if __name__ == \"__main__\":\n"
     "    data = [1, 3, 5, 7, 9, 11]\n"
     "    print(binary_search(data, 7))\n"),
    ("chat",
     "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
     "<|im_end|>\n<|im_start|>user\nWhat are three tips for staying focused while studying?"
     "<|im_end|>\n<|im_start|>assistant\n1. Remove distractions: put your phone in another room."
     "\n2. Work in short blocks with breaks.<|im_end|>\n<|im_start|>user\nAnd the third one?"
     "<|im_end|>\n<|im_start|>assistant\n"),
    ("list",
     "Shopping list:\n- 2 kg potatoes\n- 1 dozen eggs\n- 500 g flour\n- milk (semi-skimmed)\n"
     "- 3 lemons\n- olive oil\n- fresh basil\n- parmesan\n\nThings to do this week:\n"
     "1. Call the plumber about the kitchen sink\n2. Renew the library books\n"
     "3. Book dentist appointment\n4."),
]

# Chosen so that the top-1/top-2 logit gap stays >= 0.05 at every greedy step (see top1_margin in
# the output): near-ties would make the reference fragile for an engine with different numerics.
RAW_GREEDY = [
    "The capital of France is",
    "Here is a Python function that returns the factorial of n:\n\ndef factorial(n):",
    "The following is a list of the planets in our solar system:",
    "In 1969, Neil Armstrong",
]

CHAT_GREEDY = [
    [{"role": "user", "content": "What is photosynthesis?"}],
    [{"role": "user", "content": "Translate 'good morning' to Spanish."}],
    [{"role": "system", "content": "You are a concise assistant. Answer in one sentence."},
     {"role": "user", "content": "How many days are in a week?"}],
    [{"role": "user", "content": "Hi! My name is Ana."},
     {"role": "assistant", "content": "Hello Ana! How can I help you today?"},
     {"role": "user", "content": "Can you list three fruits that are red?"}],
]


# ----------------------------------------------------------------------------------------------
# JSON output: indented structure, but lists of scalars (and lists of [id, logit] pairs) on one
# line so the files stay compact and diffable.

def _is_flat(v):
    return isinstance(v, list) and all(
        not isinstance(x, (list, dict)) or (isinstance(x, list) and all(
            not isinstance(y, (list, dict)) for y in x)) for x in v)


def dumps(v, indent=0):
    pad = " " * indent
    if isinstance(v, dict):
        if not v:
            return "{}"
        items = [f'{pad} {json.dumps(k, ensure_ascii=False)}: {dumps(x, indent + 1)}'
                 for k, x in v.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(v, list):
        if _is_flat(v):
            return json.dumps(v, ensure_ascii=False, separators=(",", ":"))
        items = [pad + " " + dumps(x, indent + 1) for x in v]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(v, ensure_ascii=False)


def rnd(x):
    r = round(float(x), ROUND)
    return 0.0 if r == 0 else r  # no "-0.0"


# ----------------------------------------------------------------------------------------------

def load(model_path, logits_all):
    from llama_cpp import Llama
    return Llama(model_path=model_path, n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=512,
                 n_threads=N_THREADS, n_threads_batch=N_THREADS, logits_all=logits_all,
                 seed=0, verbose=False)


def eog_ids(llm):
    import llama_cpp
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    return [t for t in range(llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t)]


def last_logits(llm):
    ptr = llm._ctx.get_logits_ith(-1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()


def make_tokens(llm, version):
    cases = []
    for text, add_special, parse_special in TEXTS:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=add_special, special=parse_special)
        cases.append({"text": text, "add_special": add_special, "parse_special": parse_special,
                      "ids": [int(i) for i in ids]})
    return {"model": MODEL_NAME, "llama_cpp_python": version, "cases": cases}


def make_logits(llm, version):
    prompts = []
    for name, text in LOGIT_PROMPTS:
        ids = [int(i) for i in llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)]
        assert 30 <= len(ids) <= 300, (name, len(ids))
        llm.reset()
        llm._ctx.kv_cache_clear()
        llm.eval(ids)
        scores = np.array(llm.scores[:len(ids)], dtype=np.float32)
        top, lse = [], []
        for row in scores:
            # stable order: by logit descending, ties by id ascending
            idx = np.lexsort((np.arange(row.size), -row))[:TOP_K]
            top.append([[int(i), rnd(row[i])] for i in idx])
            m = float(row.max())
            lse.append(rnd(m + np.log(np.exp(row.astype(np.float64) - m).sum())))
        prompts.append({"name": name, "text": text, "n_tokens": len(ids), "ids": ids,
                        "logsumexp": lse, "top": top})
    return {"model": MODEL_NAME, "llama_cpp_python": version, "n_threads": N_THREADS,
            "top_k": TOP_K, "decimals": ROUND,
            "note": "top[i] = top-20 [id, logit] after ids[0..i] (the prediction for position i+1), "
                    "from one eval of the whole prompt (logits_all); logsumexp[i] over the full "
                    "vocab; tokenized with add_special=false (model add_bos=false), "
                    "parse_special=true. These logits differ from an exact float64 forward of "
                    "the dequantized weights by ~0.3 median / ~1.4 max (llama.cpp quantizes "
                    "activations to 8 bits), so compare with a tolerance of that order",
            "prompts": prompts}


def chat_formatter(llm):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    import jinja2
    template = llm.metadata["tokenizer.chat_template"]
    eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8")
    bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8")
    fmt = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                              add_generation_prompt=True)
    plain = jinja2.Environment().from_string(template)

    def render(messages):
        text = fmt(messages=messages).prompt
        # cross-check against plain jinja2 (no trim_blocks/lstrip_blocks)
        text2 = plain.render(messages=messages, add_generation_prompt=True,
                             eos_token=eos, bos_token=bos)
        assert text == text2, (text, text2)
        return text
    return render


def greedy(llm, ids, eog):
    llm.reset()
    llm._ctx.kv_cache_clear()
    llm.eval(ids)
    out, margins, tops, stop = [], [], [], None
    for _ in range(GREEDY_TOKENS):
        logits = last_logits(llm)
        t = int(np.argmax(logits))
        idx = np.lexsort((np.arange(logits.size), -logits))[:GREEDY_TOP]
        tops.append([[int(i), rnd(logits[i])] for i in idx])
        margins.append(rnd(logits[idx[0]] - logits[idx[1]]))
        if t in eog:
            stop = t
            break
        out.append(t)
        llm.eval([t])
    return out, margins, tops, stop


def make_greedy(llm, version):
    eog = set(eog_ids(llm))
    render = chat_formatter(llm)
    cases = []
    for text in RAW_GREEDY:
        cases.append({"kind": "raw", "prompt": text})
    for messages in CHAT_GREEDY:
        cases.append({"kind": "chat", "messages": messages, "prompt": render(messages)})
    for c in cases:
        ids = [int(i) for i in llm.tokenize(c["prompt"].encode("utf-8"), add_bos=False,
                                            special=True)]
        out, margins, tops, stop = greedy(llm, ids, eog)
        c["prompt_ids"] = ids
        c["output_ids"] = out
        c["stopped_on_eos"] = stop is not None
        c["stop_id"] = stop
        c["output_text"] = llm.detokenize(out).decode("utf-8", errors="replace")
        c["top1_margin"] = margins
        c["top"] = tops
    return {"model": MODEL_NAME, "llama_cpp_python": version, "n_threads": N_THREADS,
            "max_new_tokens": GREEDY_TOKENS, "eos_id": int(llm.token_eos()),
            "eog_ids": sorted(eog),
            "note": "argmax decoding (temperature 0, no penalties), prompt tokenized with "
                    "add_special=false, parse_special=true; stops when the argmax is an EOG id "
                    "(not included in output_ids, given as stop_id); top1_margin[i] = logit gap "
                    "between the best and second-best token at step i (includes the stop step), top[i] "
                    "the top-5 [id, logit] at step i; logits from one prefill eval of the prompt "
                    "then one single-token eval per generated token. llama.cpp's logits carry "
                    "~0.3 (median) to ~1.4 (max) of quantization noise, so an engine that is not "
                    "bit-identical may legitimately pick another token where top1_margin is small: "
                    "compare teacher-forced, step by step, with a margin tolerance",
            "cases": cases}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=os.path.join(ROOT, "models", MODEL_NAME))
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data"))
    ap.add_argument("--check", action="store_true",
                    help="compare with the existing files instead of writing them")
    args = ap.parse_args()

    import llama_cpp
    version = llama_cpp.__version__
    if os.path.basename(os.path.realpath(args.model)) != MODEL_NAME:
        print(f"warning: model file is not {MODEL_NAME}", file=sys.stderr)

    llm_all = load(args.model, logits_all=True)
    assert llm_all.metadata.get("tokenizer.ggml.add_bos_token") == "false"
    tokens = make_tokens(llm_all, version)
    logits = make_logits(llm_all, version)
    del llm_all
    llm = load(args.model, logits_all=False)
    greedy_doc = make_greedy(llm, version)

    outputs = {"golden_tokens.json": tokens, "golden_logits.json": logits,
               "golden_greedy.json": greedy_doc}
    os.makedirs(args.out, exist_ok=True)
    ok = True
    for name, doc in outputs.items():
        text = dumps(doc) + "\n"
        path = os.path.join(args.out, name)
        if args.check:
            old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            same = old == text
            ok &= same
            print(f"{name}: {'identical' if same else 'DIFFERENT'}")
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)

    n_tok = sum(len(c["ids"]) for c in tokens["cases"])
    print(f"llama-cpp-python {version}, model {MODEL_NAME}, {N_THREADS} threads")
    print(f"golden_tokens.json: {len(tokens['cases'])} cases, {n_tok} ids")
    print("golden_logits.json: " + ", ".join(
        f"{p['name']}={p['n_tokens']}" for p in logits["prompts"])
        + f" tokens (total {sum(p['n_tokens'] for p in logits['prompts'])}), top-{TOP_K}/position")
    for c in greedy_doc["cases"]:
        print(f"golden_greedy.json: {c['kind']:4} prompt {len(c['prompt_ids']):3} -> "
              f"{len(c['output_ids']):2} ids{' +EOS' if c['stopped_on_eos'] else ''}, "
              f"min margin {min(c['top1_margin']):.4f}: {c['output_text'][:60]!r}")
    if not args.check:
        for name in outputs:
            p = os.path.join(args.out, name)
            print(f"wrote {os.path.relpath(p, ROOT)} ({os.path.getsize(p)} bytes)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
