#!/usr/bin/env python3
"""Block fine-tuning: makes a model read documents encoded alone as well as it reads them under
full attention, then exports the GGUF lazyattn serves unchanged (docs/finetune.md).

Samples are laid out by the engine itself (la_rag_layout render: the model's chat template, the
preamble as segment 0, each document a segment tokenized alone, the question and the assistant
header as the tail) and trained with the attention lazyattn computes (block_attention.py: each
document sees itself, or the preamble and itself with --layout anchored; the tail sees
everything). The objective (--objective):

  sft      cross-entropy on the answer's tokens (prose samples: on every token);
  distill  KL(teacher || student) on the tail's rows (question and answer tokens; the teacher's
           greedy reply where a sample has none), the teacher being the frozen starting model
           under full attention over the same prompt (distill.py);
  mix      distill + --mix-weight x sft (sft only where the sample has a real answer).

A share of samples runs under full attention (--full-attention-share, RAG samples whose
documents see each other) and a share is plain prose (--prose-share), so the model stays good
without documents. The default data takes nothing from bench quality's generators (data.py).

The last line printed is the path of the produced GGUF.

  scripts/finetune/finetune.py --model models/SmolLM2-135M-Instruct.Q4_1.gguf --minutes 60
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import data as data_mod  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = ap.add_argument_group("model")
    g.add_argument("--model", default=os.path.join(ROOT, "models/SmolLM2-135M-Instruct.Q4_1.gguf"),
                   help="a GGUF (dequantized by transformers' GGUF loader) or a Hugging Face model directory")
    g.add_argument("--out", default=os.path.join(ROOT, "finetune-out"), help="output folder (checkpoints, data, GGUF)")
    g.add_argument("--output-gguf", help="the GGUF to write (default OUT/<model>-blockft-<layout>.<TYPE>.gguf)")
    g.add_argument("--outtype", help="llama-quantize type of the GGUF (default: the input GGUF's type; "
                                     "F16 for a Hugging Face directory)")
    g.add_argument("--layout", choices=["plain", "anchored"], default="plain",
                   help="how documents are encoded: alone (lazy's default) or after the preamble (document_reuse anchor)")
    g = ap.add_argument_group("objective")
    g.add_argument("--objective", choices=["sft", "distill", "mix"], default="mix",
                   help="sft: answer cross-entropy; distill: KL(full-attention teacher || block-masked student) "
                        "on the tail; mix: distill + --mix-weight x sft")
    g.add_argument("--mix-weight", type=float, default=0.5, help="weight of the SFT term under --objective mix")
    g.add_argument("--teacher", help="teacher GGUF or HF directory (default: the starting model itself, frozen: "
                                     "with LoRA its adapters disabled, no second copy)")
    g.add_argument("--teacher-top-k", type=int, default=64,
                   help="teacher tokens cached per row (plus the remaining mass): k x 8 + 4 bytes a row")
    g.add_argument("--teacher-max-new", type=int, default=32,
                   help="longest teacher reply generated for a sample without an answer")
    g = ap.add_argument_group("method")
    g.add_argument("--method", choices=["lora", "full"], default="lora")
    g.add_argument("--lora-rank", type=int, default=32)
    g.add_argument("--lora-alpha", type=float, default=64)
    g.add_argument("--lora-dropout", type=float, default=0.0)
    g.add_argument("--lora-targets", default="q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
                   help="comma-separated module names")
    g.add_argument("--lr", type=float, default=None, help="default 3e-4 for LoRA, 2e-5 for full fine-tuning")
    g.add_argument("--warmup-steps", type=int, default=10)
    g.add_argument("--lr-schedule", choices=["cosine", "constant"], default="cosine",
                   help="after warm-up: cosine decay to --min-lr-ratio over the run (its steps or its --minutes, "
                        "whichever ends first), or constant")
    g.add_argument("--min-lr-ratio", type=float, default=0.1, help="the cosine schedule's final learning rate / --lr")
    g.add_argument("--weight-decay", type=float, default=0.0)
    g.add_argument("--batch", type=int, default=8, help="samples per optimizer step (gradient accumulation)")
    g.add_argument("--epochs", type=float, default=1.0, help="passes over the samples (the stop if --minutes is not reached)")
    g.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    g.add_argument("--minutes", type=float, default=0, help="stop cleanly after this much training time (0: no limit)")
    g.add_argument("--checkpoint-every", type=int, default=25, help="steps between checkpoints")
    g.add_argument("--checkpoint-minutes", type=float, default=0,
                   help="also checkpoint whenever this much training time has passed since the last one")
    g.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in OUT")
    g.add_argument("--export-checkpoint", metavar="DIR",
                   help="only export this checkpoint (OUT/checkpoints/step-N; same method flags as its run) to a GGUF")
    g.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    g.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                   help="training precision (bfloat16 for a GPU)")
    g.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    g.add_argument("--seed", type=int, default=1)
    g = ap.add_argument_group("data")
    g.add_argument("--wiki", default=os.path.join(ROOT, "data/2wiki_sample.jsonl"))
    g.add_argument("--wiki-repeats", type=int, default=4, help="times each train 2Wiki question is used (documents reshuffled)")
    g.add_argument("--synthetic", type=int, default=0,
                   help="bench quality's own kv/hop/agg tasks (other seeds) to add: 0 keeps the benchmark out of training")
    g.add_argument("--synthetic-seed", type=int, default=1000, help="first seed (bench quality uses 1)")
    g.add_argument("--doc-counts", type=int, nargs="+", default=[2, 5, 10, 20], help="documents per synthetic task")
    g.add_argument("--max-prompt-words", type=int, default=1000, help="cap on a task's documents, in words")
    g.add_argument("--prose-tasks", type=int, default=2000,
                   help="reading questions over Python's reference and the OS's license texts (prose_tasks.py)")
    g.add_argument("--prose-task-words", type=int, default=70, help="words per prose passage")
    g.add_argument("--heldout-prompts", type=int, default=40,
                   help="reading questions over held-out passages written for the KL evaluation")
    g.add_argument("--full-attention-share", type=float, default=0.15,
                   help="share of RAG samples trained under full attention")
    g.add_argument("--prose-share", type=float, default=0.1,
                   help="prose samples (language modelling on every token) per RAG sample")
    g.add_argument("--prose-words", type=int, default=200)
    g.add_argument("--data", help="your own JSONL of {question, documents, answer?} (replaces the built-in RAG samples)")
    g.add_argument("--data-mix", action="store_true", help="with --data: keep the built-in samples too")
    g.add_argument("--max-tokens", type=int, default=4096, help="refuse a sample longer than this")
    g.add_argument("--layout-bin", default=os.path.join(ROOT, "build/tools/la_rag_layout"),
                   help="the engine's layout tool (cmake --build build --target la_rag_layout)")
    args = ap.parse_args(argv)
    if args.lr is None:
        args.lr = 3e-4 if args.method == "lora" else 2e-5
    if args.teacher_top_k < 1 or args.teacher_max_new < 1 or args.mix_weight < 0:
        ap.error("--teacher-top-k and --teacher-max-new must be >= 1, --mix-weight >= 0")
    for name in ("full_attention_share", "prose_share"):
        if not 0 <= getattr(args, name) <= 1:
            ap.error(f"--{name.replace('_', '-')} must be in [0, 1]")
    return args


class Progress:
    """One line: step, loss, tokens/s, ETA; redrawn in place on a terminal, else every few seconds."""

    def __init__(self, total_steps, minutes):
        self.total, self.minutes = total_steps, minutes
        self.tty = sys.stderr.isatty()
        self.last_print = 0.0

    def update(self, step, loss, tok_s, elapsed, final=False):
        left = []
        if self.total:
            left.append((self.total - step) * elapsed / max(1, step))
        if self.minutes:
            left.append(self.minutes * 60 - elapsed)
        eta = max(0.0, min(left)) if left else 0.0
        frac = step / self.total if self.total else 0
        if self.minutes:
            frac = max(frac, elapsed / (self.minutes * 60))
        bar = "#" * int(24 * min(1, frac))
        line = (f"[{bar:<24}] step {step}{'/' + str(self.total) if self.total else ''}  loss {loss:.4f}  "
                f"{tok_s:,.0f} tok/s  elapsed {elapsed / 60:.1f} min  ETA {eta / 60:.1f} min")
        now = time.time()
        if self.tty:
            sys.stderr.write("\r" + line + ("\n" if final else ""))
            sys.stderr.flush()
        elif final or now - self.last_print >= 20:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
            self.last_print = now


def load_model(args, torch):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    dtype = getattr(torch, args.dtype)
    if os.path.isdir(args.model):
        tok = AutoTokenizer.from_pretrained(args.model)
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype)
    else:
        d, f = os.path.split(os.path.abspath(args.model))
        try:
            tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
            model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=dtype)
        except Exception as e:  # the loader's own message names the architecture or tensor type
            raise SystemExit(f"error: transformers' GGUF loader cannot dequantize {args.model}: {e}")
    import block_attention
    try:
        block_attention.check_supported(model)
    except ValueError as e:
        raise SystemExit(f"error: {args.model}: {e}")
    return model.to(args.device), tok


def engine_gguf_for(args, out_dir, torch, model, tok):
    """The GGUF whose tokenizer and template lay samples out: the input itself, or (for a Hugging
    Face directory) its conversion by llama.cpp's converter, as the engine would serve it."""
    if not os.path.isdir(args.model):
        return args.model
    import export
    path = os.path.join(out_dir, "source.f16.gguf")
    if not os.path.exists(path):
        env, conv, _ = export.ensure_llama_tools(ROOT, False)
        r = subprocess.run([sys.executable, conv, args.model, "--outtype", "f16", "--outfile", path + ".tmp"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("error: convert_hf_to_gguf.py cannot convert " + args.model + ":\n" + r.stderr[-3000:])
        os.replace(path + ".tmp", path)
    return path


def layout_bin(args):
    b = args.layout_bin
    if not os.access(b, os.X_OK):
        raise SystemExit(f"error: {b} is not built (cmake --build build --target la_rag_layout)")
    return b


def checkpoints(out_dir):
    return sorted(glob.glob(os.path.join(out_dir, "checkpoints/step-*")), key=lambda p: int(p.rsplit("-", 1)[1]))


def trainable_state(model):
    return {k: v.detach().cpu() for k, v in model.named_parameters() if v.requires_grad}


def learning_rate(args, step, elapsed_s, total_steps):
    """Linear warm-up, then the schedule. Under --minutes the run's end is whichever comes first, its
    steps or its time budget, so a time-boxed run still ends at the low rate: the last weights are then
    an average over quiet steps rather than one noisy sample at the peak rate (a constant 1e-3 LoRA
    run's held-out perplexity moved 21% between its last two checkpoints, docs/benchmarks.md §9)."""
    warm = min(1.0, (step + 1) / max(1, args.warmup_steps))
    if args.lr_schedule == "constant":
        return args.lr * warm
    done = step / max(1, total_steps)
    if args.minutes:
        done = max(done, elapsed_s / (args.minutes * 60))
    done = min(1.0, done)
    floor = args.min_lr_ratio
    return args.lr * warm * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * done)))


# What a checkpoint must be exported with: the flags that shape the trainable weights and the
# layout, plus what the GGUF's sidecar reports.
TRAINING_FLAGS = ("objective", "mix_weight", "teacher_top_k", "layout", "method", "lora_rank", "lora_alpha", "lora_dropout", "lora_targets", "lr", "batch",
                  "lr_schedule", "min_lr_ratio")


def save_checkpoint(out_dir, model, opt, state, torch):
    d = os.path.join(out_dir, "checkpoints", f"step-{state['step']:06d}")
    tmp = d + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    torch.save(trainable_state(model), os.path.join(tmp, "trainable.pt"))
    torch.save(opt.state_dict(), os.path.join(tmp, "optimizer.pt"))
    with open(os.path.join(tmp, "state.json"), "w") as f:
        json.dump(state, f, indent=1)
    shutil.rmtree(d, ignore_errors=True)
    os.replace(tmp, d)
    return d


def load_trainable(model, path, torch):
    sd = torch.load(os.path.join(path, "trainable.pt"))
    params = dict(model.named_parameters())
    missing = [k for k in sd if k not in params]
    if missing:
        raise SystemExit(f"error: checkpoint {path} does not fit this model/method ({missing[0]} ...)")
    with torch.no_grad():
        for k, v in sd.items():
            params[k].copy_(v.to(params[k].device, params[k].dtype))


def prepare_trainable(args, model):
    """LoRA adapters on the target modules (only they train), or every weight (full)."""
    if args.method == "lora":
        from peft import LoraConfig, get_peft_model
        targets = [t.strip() for t in args.lora_targets.split(",") if t.strip()]
        names = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules()}
        unknown = [t for t in targets if t not in names]
        if unknown:
            raise SystemExit(f"error: --lora-targets: the model has no module named {unknown[0]!r}")
        cfg = LoraConfig(r=args.lora_rank, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
                         target_modules=targets, bias="none", task_type="CAUSAL_LM")
        return get_peft_model(model, cfg)
    for p in model.parameters():
        p.requires_grad_(True)
    return model


def check_lengths(args, model, samples, rendered):
    """Every laid-out sample fits --max-tokens and the model's context (a sample without an answer
    leaves room for the teacher's reply); the error names the item (FILE:LINE for --data)."""
    ctx = getattr(model.config, "max_position_embeddings", 0) or 0
    limit = min(args.max_tokens, ctx) if ctx else args.max_tokens
    for n, (s, r) in enumerate(zip(samples, rendered), 1):
        if "tokens" in r:
            continue
        total = sum(len(x) for x in r["segments"]) + len(r["tail"]) + (len(r["answer"]) or args.teacher_max_new)
        if total > limit:
            which = "--max-tokens" if limit == args.max_tokens else f"the model's context ({ctx})"
            raise SystemExit(f"error: {s.get('source', f'sample {n}')}: {total} tokens, more than {which} "
                             f"(--max-tokens {args.max_tokens}): shorten its documents or raise the limit; "
                             "nothing was trained")


def load_teacher(args, torch, model, tok):
    """A separate teacher (--teacher): loaded and checked against the student's vocabulary."""
    if not args.teacher:
        return None
    from transformers import AutoModelForCausalLM
    try:
        if os.path.isdir(args.teacher):
            t = AutoModelForCausalLM.from_pretrained(args.teacher, dtype=getattr(torch, args.dtype))
        else:
            d, f = os.path.split(os.path.abspath(args.teacher))
            t = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=getattr(torch, args.dtype))
    except Exception as e:
        raise SystemExit(f"error: the teacher {args.teacher} cannot be loaded: {str(e).splitlines()[0] if str(e) else e!r}")
    if t.config.vocab_size != model.config.vocab_size:
        raise SystemExit(f"error: the teacher {args.teacher} has {t.config.vocab_size} tokens, the model "
                         f"{model.config.vocab_size}: it must share the model's vocabulary")
    for p_ in t.parameters():
        p_.requires_grad_(False)
    return t.to(args.device).eval()


def main(argv=None):
    args = parse_args(argv)
    import torch
    import block_attention
    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("error: --device cuda, but torch sees no GPU (scripts/finetune/install.sh --device cuda)")
    os.makedirs(args.out, exist_ok=True)
    lbin = layout_bin(args)
    if args.data and not args.export_checkpoint:  # bad lines are named before anything is loaded
        for n, s in data_mod.read_jsonl_numbered(args.data):
            data_mod.check_rag_sample(s, f"{args.data}:{n}", args.objective == "sft")
    t_load = time.time()
    model, tok = load_model(args, torch)
    teacher_sep = None
    if args.objective != "sft" and not args.export_checkpoint:
        teacher_sep = load_teacher(args, torch, model, tok)
    src_gguf = engine_gguf_for(args, args.out, torch, model, tok)
    print(f"[finetune] model {args.model} ({sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters, "
          f"{model.config.model_type}) loaded in {time.time() - t_load:.0f} s", file=sys.stderr)

    if args.export_checkpoint:
        with open(os.path.join(args.export_checkpoint, "state.json")) as f:
            state = json.load(f)
        for k, v in state.get("training_flags", {}).items():
            setattr(args, k, v)  # the run's own flags, not this command's defaults
        model = prepare_trainable(args, model)
        load_trainable(model, args.export_checkpoint, torch)
        path = export_model(args, model, tok, src_gguf, state)
        print(path)
        return path

    # Data: built once per output folder (a resumed run reads the same samples).
    data_dir = os.path.join(args.out, "data")
    rendered = os.path.join(data_dir, "rendered.jsonl")
    if not (args.resume and os.path.exists(rendered)):
        os.makedirs(data_dir, exist_ok=True)
        summary = data_mod.build(args, lbin, data_dir)
        r = subprocess.run([lbin, "render", src_gguf, os.path.join(data_dir, "samples.jsonl"), rendered + ".tmp",
                            "--answer-optional"])
        if r.returncode != 0:  # la_rag_layout has named the sample
            raise SystemExit("error: the samples could not be laid out (see above); nothing was trained")
        try:
            check_lengths(args, model, data_mod.read_jsonl(os.path.join(data_dir, "samples.jsonl")),
                          data_mod.read_jsonl(rendered + ".tmp"))
        except SystemExit:
            os.remove(rendered + ".tmp")
            raise
        os.replace(rendered + ".tmp", rendered)
        with open(os.path.join(data_dir, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
    with open(os.path.join(data_dir, "summary.json")) as f:
        summary = json.load(f)
    meta = data_mod.read_jsonl(os.path.join(data_dir, "samples.jsonl"))
    rows = data_mod.read_jsonl(rendered)
    if len(meta) != len(rows):
        raise SystemExit("error: samples and rendered samples differ in number; remove OUT/data and rerun")
    print(f"[finetune] {summary['samples']} samples: {summary['rag']} RAG ({summary['full_attention_rag']} under full "
          f"attention), {summary['prose']} prose; 2Wiki: {len(summary['wiki_train_questions'])} train, "
          f"{len(summary['wiki_heldout_questions'])} held-out questions; by kind {summary.get('kinds')}",
          file=sys.stderr)

    if args.objective != "sft" and args.method == "full" and teacher_sep is None:
        import copy
        teacher_sep = copy.deepcopy(model).eval()  # full fine-tuning changes every weight: keep the start
        for p_ in teacher_sep.parameters():
            p_.requires_grad_(False)
    model = prepare_trainable(args, model)
    teacher = None
    if args.objective != "sft":
        import distill
        teacher = distill.Teacher(model, tok, args.teacher_top_k, args.teacher_max_new, args.max_tokens,
                                  os.path.join(args.out, "teacher_cache.pt") if args.resume else None, teacher_sep)
        teacher.path = os.path.join(args.out, "teacher_cache.pt")
    params = [p for p in model.parameters() if p.requires_grad]
    print(f"[finetune] {args.method}: {sum(p.numel() for p in params) / 1e6:.2f}M trainable parameters, "
          f"lr {args.lr}, batch {args.batch}, layout {args.layout}", file=sys.stderr)
    opt = torch.optim.AdamW(params, lr=args.lr, weight_decay=args.weight_decay)

    order_rng = random.Random(args.seed)
    n = len(rows)
    total_steps = int(math.ceil(args.epochs * n / args.batch))
    if args.max_steps:
        total_steps = min(total_steps, args.max_steps)
    state = {"step": 0, "cursor": 0, "elapsed_s": 0.0, "tokens": 0, "losses": [], "epoch_order_seed": args.seed,
             "training_flags": {k: getattr(args, k) for k in TRAINING_FLAGS}}
    if args.resume and checkpoints(args.out):
        last = checkpoints(args.out)[-1]
        load_trainable(model, last, torch)
        opt.load_state_dict(torch.load(os.path.join(last, "optimizer.pt")))
        with open(os.path.join(last, "state.json")) as f:
            state = json.load(f)
        print(f"[finetune] resumed from {last} (step {state['step']}, {state['elapsed_s'] / 60:.1f} min)", file=sys.stderr)
    elif checkpoints(args.out) and not args.resume:
        shutil.rmtree(os.path.join(args.out, "checkpoints"))

    def order_for(epoch):
        idx = list(range(n))
        random.Random(args.seed * 1000003 + epoch).shuffle(idx)
        return idx

    def sample_loss(i):
        if teacher is not None:
            return distill_loss(i)
        r, m = rows[i], meta[i]
        if "tokens" in r:  # prose: every next token
            ids = r["tokens"][: args.max_tokens]
            lay = block_attention.make_layout([], False, ids, "full")
            logits = block_attention.block_forward(model, lay, torch.arange(0, len(ids) - 1))
            target = torch.tensor(ids[1:], device=logits.device)
        else:
            layout = "full" if m.get("attention") == "full" else args.layout
            tail = r["tail"] + r["answer"][:-1]
            lay = block_attention.make_layout(r["segments"], r["preamble"], tail, layout)
            first = lay.tail_start + len(r["tail"]) - 1
            logits = block_attention.block_forward(model, lay, torch.arange(first, first + len(r["answer"])))
            target = torch.tensor(r["answer"], device=logits.device)
        loss = torch.nn.functional.cross_entropy(logits.float(), target)
        return loss, int(lay.ids.shape[0])

    def distill_loss(i):
        r, m = rows[i], meta[i]
        e = teacher.entry(i, r, m.get("source", f"sample {i}"))
        if "tokens" in r:
            ids = r["tokens"][: args.max_tokens]
            lay = block_attention.make_layout([], False, ids, "full")
            logits = block_attention.block_forward(model, lay, torch.arange(0, len(ids) - 1))
            loss = distill.topk_kl(e, logits)
            if args.objective == "mix":
                ce = torch.nn.functional.cross_entropy(logits.float(), torch.tensor(ids[1:], device=logits.device))
                loss = loss + args.mix_weight * ce
            return loss, len(ids)
        layout = "full" if m.get("attention") == "full" else args.layout
        logits, n_tok = distill.student_logits(model, r, e["answer"], layout)
        loss = distill.topk_kl(e, logits)
        if args.objective == "mix" and r["answer"]:
            k = len(r["answer"])
            ce = torch.nn.functional.cross_entropy(logits[-k:].float(), torch.tensor(r["answer"], device=logits.device))
            loss = loss + args.mix_weight * ce
        return loss, n_tok

    progress = Progress(total_steps, args.minutes)
    model.train()
    t_start = time.time() - state["elapsed_s"]
    last_ckpt_time = state["elapsed_s"]
    window = []
    stop_reason = "epochs"
    while state["step"] < total_steps:
        elapsed = time.time() - t_start
        if args.minutes and elapsed >= args.minutes * 60:
            stop_reason = f"time budget ({args.minutes} min)"
            break
        t_step = time.time()
        opt.zero_grad(set_to_none=True)
        lr = learning_rate(args, state["step"], elapsed, total_steps)
        for g in opt.param_groups:
            g["lr"] = lr
        step_loss, step_tokens = 0.0, 0
        for _ in range(args.batch):
            epoch, pos = divmod(state["cursor"], n)
            i = order_for(epoch)[pos]
            loss, toks = sample_loss(i)
            (loss / args.batch).backward()
            step_loss += loss.item() / args.batch
            step_tokens += toks
            state["cursor"] += 1
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        state["step"] += 1
        state["tokens"] += step_tokens
        state["elapsed_s"] = time.time() - t_start
        state["losses"].append([state["step"], round(state["elapsed_s"], 1), step_loss])
        window.append((step_loss, step_tokens, time.time() - t_step))
        window = window[-10:]
        tok_s = sum(w[1] for w in window) / max(1e-9, sum(w[2] for w in window))
        progress.update(state["step"], sum(w[0] for w in window) / len(window), tok_s, state["elapsed_s"])
        if state["step"] % args.checkpoint_every == 0 or (
                args.checkpoint_minutes and state["elapsed_s"] - last_ckpt_time >= args.checkpoint_minutes * 60):
            save_checkpoint(args.out, model, opt, state, torch)
            if teacher is not None:
                teacher.save()
            last_ckpt_time = state["elapsed_s"]
    if state["step"] < total_steps and stop_reason == "epochs":
        stop_reason = "max steps"
    recent = [l[2] for l in state["losses"][-10:]] or [float("nan")]
    progress.update(state["step"], sum(recent) / len(recent), 0, state["elapsed_s"], final=True)
    if state["step"]:
        save_checkpoint(args.out, model, opt, state, torch)
    if teacher is not None:
        teacher.save()
        state["teacher"] = {"top_k": args.teacher_top_k, "samples": len(teacher.cache), "rows": teacher.rows(),
                            "cache_mib": round(teacher.nbytes() / 2**20, 2), "seconds": round(teacher.seconds, 1)}
        print(f"[finetune] teacher cache: {len(teacher.cache)} samples, {teacher.rows():,} rows, top-{args.teacher_top_k}: "
              f"{teacher.nbytes() / 2**20:.1f} MiB (full rows would be "
              f"{teacher.rows() * model.config.vocab_size * 4 / 2**20:,.0f} MiB); {teacher.seconds:.0f} s of the "
              f"{state['elapsed_s']:.0f} s computing it", file=sys.stderr)
    print(f"[finetune] stopped after {state['step']} steps, {state['cursor']} samples, {state['tokens']:,} tokens, "
          f"{state['elapsed_s'] / 60:.1f} min ({stop_reason})", file=sys.stderr)

    path = export_model(args, model, tok, src_gguf, state)
    print(path)
    return path


def default_outtype(args, src_gguf):
    if args.outtype:
        return args.outtype
    if os.path.isdir(args.model):
        return "F16"
    import export
    env = export.llama_env(ROOT)
    t = export.gguf_file_type(export.import_gguf(env), src_gguf)
    return t or "F16"


def export_model(args, model, tok, src_gguf, state):
    import export
    model.eval()
    outtype = default_outtype(args, src_gguf)
    base = os.path.basename(args.model.rstrip("/"))
    for suffix in (".gguf",):
        base = base[: -len(suffix)] if base.endswith(suffix) else base
    base = base.split(".")[0]
    out = args.output_gguf or os.path.join(args.out, f"{base}-blockft-{args.layout}.{outtype.upper()}.gguf")
    export.export_gguf(ROOT, model, tok, out, args.layout, outtype,
                       source_gguf=None if os.path.isdir(args.model) else src_gguf,
                       source_hf_dir=args.model if os.path.isdir(args.model) else None,
                       name=f"{base} block-FT {args.layout}")
    with open(out + ".json", "w") as f:
        json.dump({"model": args.model, "objective": args.objective, "layout": args.layout, "method": args.method,
                   "steps": state["step"], "teacher": state.get("teacher"),
                   "samples_seen": state["cursor"], "tokens": state["tokens"],
                   "minutes": round(state["elapsed_s"] / 60, 2), "lr": args.lr, "batch": args.batch,
                   "args": {k: v for k, v in vars(args).items()}}, f, indent=1)
    return out


if __name__ == "__main__":
    main()
