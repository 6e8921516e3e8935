"""The distillation objective: the block-masked model should say what the full-attention model says.

Teacher: the frozen starting model under ordinary causal attention over the rendered prompt
(block_attention layout "full", what `--cache-mode none` computes). With LoRA the teacher is the
model being tuned with its adapters disabled (PEFT's disable_adapter): the base weights never
change, so no second copy is held. With --method full, or a --teacher file, it is a separate
frozen model.

Student: the model being tuned under lazyattn's block mask (layout plain or anchored).

Loss: KL(teacher || student) averaged over the tail's rows: every row from the first question
token to the one predicting the answer's last token. A sample without an answer uses the
teacher's own greedy continuation (generated once, at most --teacher-max-new tokens, up to its
end-of-turn token), so any corpus of questions works without labels. Prose samples (full
attention for both) are distilled on every token: they hold the tuned model to the base one.

The teacher's distribution is computed once per sample, at its first use, and cached as its
top-k (--teacher-top-k, default 64) token ids and log-probabilities plus the log of the mass
outside them; the KL is then taken between the two (k+1)-bucket distributions (the student's
mass on the teacher's top k, and the rest), which is exact when the teacher puts all its mass in
the top k and a lower bound otherwise. Memory: k x 8 + 4 bytes per row (516 B at k = 64)
against vocab x 4 for the full row (196,608 B for SmolLM2's 49,152 tokens: 381x more).
"""
from __future__ import annotations

import contextlib
import os

import torch
import torch.nn.functional as F

import block_attention


@contextlib.contextmanager
def frozen_base(model):
    """The starting model: a PEFT model's adapters disabled, or the model itself."""
    if hasattr(model, "disable_adapter"):
        with model.disable_adapter():
            yield model
    else:
        yield model


def end_ids(tok):
    ids = set()
    if tok.eos_token_id is not None:
        ids.add(int(tok.eos_token_id))
    for t in ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>"):
        i = tok.convert_tokens_to_ids(t)
        if isinstance(i, int) and i >= 0 and i != tok.unk_token_id:
            ids.add(i)
    return sorted(ids)


def greedy_continuation(teacher, ids, stop, max_new):
    """The teacher's greedy reply under full attention (HF's own cached decode), ending with its
    end-of-turn token when it writes one within max_new tokens."""
    dev = next(teacher.parameters()).device
    x = torch.tensor([ids], device=dev)
    with torch.no_grad():
        out = teacher.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=max_new,
                               do_sample=False, eos_token_id=stop, pad_token_id=stop[0])
    return [int(t) for t in out[0, len(ids):]]


def sequence(row, answer):
    """Layout inputs and the KL rows of a rendered RAG row with `answer` as its reply."""
    tail = row["tail"] + answer[:-1]
    t0 = sum(len(s) for s in row["segments"])
    return tail, torch.arange(t0, t0 + len(tail))


def topk_entry(logits, k):
    lp = F.log_softmax(logits.float(), dim=-1)
    k = min(k, lp.shape[-1])
    top_lp, top_id = lp.topk(k, dim=-1)
    if k == lp.shape[-1]:  # nothing outside: the exact distribution
        rest = torch.full(top_lp.shape[:-1], float("-inf"))
    else:
        rest = torch.log1p(-top_lp.exp().sum(-1).clamp(max=1 - 1e-7))
    return {"ids": top_id.to(torch.int32).cpu(), "logp": top_lp.cpu(), "rest": rest.cpu()}


def topk_kl(entry, student_logits):
    """Mean over rows of KL(teacher || student) between (k+1)-bucket distributions."""
    ids = entry["ids"].to(student_logits.device).long()
    t_lp = entry["logp"].to(student_logits.device)
    t_rest = entry["rest"].to(student_logits.device)
    s = student_logits.float()
    norm = torch.logsumexp(s, dim=-1)
    s_lp = s.gather(-1, ids) - norm[:, None]
    s_rest = torch.logsumexp(s.scatter(-1, ids, float("-inf")), dim=-1) - norm
    has_rest = torch.isfinite(t_rest)  # -inf when the top k is the whole vocabulary
    t_r = torch.where(has_rest, t_rest, torch.zeros_like(t_rest))
    s_r = torch.where(has_rest, s_rest, torch.zeros_like(s_rest))
    kl = (t_lp.exp() * (t_lp - s_lp)).sum(-1) + torch.where(has_rest, t_r.exp() * (t_r - s_r), torch.zeros_like(t_r))
    return kl.mean()


def full_kl(teacher_logits, student_logits):
    """Exact mean KL(teacher || student) over rows (evaluation)."""
    t = F.log_softmax(teacher_logits.float(), dim=-1)
    s = F.log_softmax(student_logits.float(), dim=-1)
    return (t.exp() * (t - s)).sum(-1).mean()


class Teacher:
    """Computes and caches the teacher's top-k distribution per sample (index into rows)."""

    def __init__(self, model, tok, k, max_new, max_tokens, cache_path=None, separate=None):
        self.model, self.separate = model, separate
        self.k, self.max_new, self.max_tokens = k, max_new, max_tokens
        self.stop = end_ids(tok)
        self.cache = {}
        self.path = cache_path
        self.seconds = 0.0
        if cache_path and os.path.exists(cache_path):
            saved = torch.load(cache_path)
            if saved.get("k") == k:
                self.cache = saved["entries"]
                self.seconds = saved.get("seconds", 0.0)

    def _ctx(self):
        return contextlib.nullcontext(self.separate) if self.separate is not None else frozen_base(self.model)

    def entry(self, i, row, where):
        if i in self.cache:
            return self.cache[i]
        import time
        t = time.time()
        with torch.no_grad(), self._ctx() as m:
            if "tokens" in row:
                ids = row["tokens"][: self.max_tokens]
                lay = block_attention.make_layout([], False, ids, "full")
                e = topk_entry(block_attention.block_forward(m, lay, torch.arange(0, len(ids) - 1)), self.k)
            else:
                answer = row["answer"]
                if not answer:
                    flat = [t_ for s in row["segments"] for t_ in s] + row["tail"]
                    answer = greedy_continuation(m, flat, self.stop, self.max_new)
                    if not answer:
                        raise SystemExit(f"error: {where}: the teacher wrote no continuation")
                tail, rows = sequence(row, answer)
                lay = block_attention.make_layout(row["segments"], row["preamble"], tail, "full")
                e = topk_entry(block_attention.block_forward(m, lay, rows), self.k)
                e["answer"] = answer
        self.cache[i] = e
        self.seconds += time.time() - t
        return e

    def nbytes(self):
        return sum(e["ids"].numel() * 4 + e["logp"].numel() * 4 + e["rest"].numel() * 4 for e in self.cache.values())

    def rows(self):
        return sum(int(e["rest"].numel()) for e in self.cache.values())

    def save(self):
        if not self.path:
            return
        tmp = self.path + ".tmp"
        torch.save({"k": self.k, "entries": self.cache, "seconds": self.seconds}, tmp)
        os.replace(tmp, self.path)


def student_logits(model, row, answer, layout):
    tail, rows = sequence(row, answer)
    lay = block_attention.make_layout(row["segments"], row["preamble"], tail, layout)
    return block_attention.block_forward(model, lay, rows), int(lay.ids.shape[0])
