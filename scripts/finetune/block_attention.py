"""The forward pass lazyattn computes for a RAG request, in PyTorch, on a Hugging Face model.

A request is segments (segment 0 the preamble when `preamble`, then the documents) and a tail
(question, assistant header, and in training the answer). lazyattn (docs/design.md, sections 1,
2 and 10) encodes each segment as its own sequence and lets the tail read everything:

  layout "plain"     a segment's rows see only that segment, causally, at its local positions
                     0..L-1 (the preamble is segment 0: it starts at 0 anyway);
  layout "anchored"  a document's rows see the preamble and then the document, at positions
                     P..P+L-1 (P = the preamble's length), as `document_reuse: anchor` encodes
                     them; the preamble is encoded alone;
  layout "full"      ordinary causal attention over the flattened prompt (cache mode `none`).

The tail's rows see every segment token and the tail causally, each key at its logical position
(segment d starts at S_d = L_0 + ... + L_{d-1}). lazyattn stores a document's keys rotated at the
positions they were encoded at and rotates the tail's query by -Delta per document instead
(Delta = S_d - stored start); by RoPE's relativity the scores equal those of keys rotated at
their logical positions, which is how this module computes them. Scores, softmax and values are
otherwise a plain Llama layer, so the same code trains the model (gradients reach the documents'
encoding through the tail's loss) and serves as an independent check of the engine's kernels
(scripts/finetune/oracle.py).

Supported: the Llama family as transformers implements it (llama, mistral, qwen2 with its q/k/v
biases, qwen3 with its per-head q/k norms). Others are refused by name.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

SUPPORTED = ("llama", "mistral", "qwen2", "qwen3")
LAYOUTS = ("plain", "anchored", "full")


@dataclass
class Layout:
    """Per-token bookkeeping for one request."""
    ids: torch.Tensor          # [N] token ids: segments, then tail
    segment: torch.Tensor      # [N] segment index, -1 for the tail
    logical: torch.Tensor      # [N] logical position
    stored: torch.Tensor       # [N] the position a segment row is encoded at (tail: logical)
    bounds: list[tuple[int, int]]  # [start, end) of each segment in the flattened order
    tail_start: int
    preamble: bool
    layout: str


def make_layout(segments: list[list[int]], preamble: bool, tail: list[int], layout: str) -> Layout:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    if not tail:
        raise ValueError("the tail must not be empty")
    ids, seg, logical, stored, bounds = [], [], [], [], []
    p_len = len(segments[0]) if preamble and segments else 0
    pos = 0
    for d, s in enumerate(segments):
        bounds.append((pos, pos + len(s)))
        base = p_len if (layout == "anchored" and preamble and d > 0) else 0
        for i, t in enumerate(s):
            ids.append(t)
            seg.append(d)
            logical.append(pos + i)
            stored.append(pos + i if layout == "full" else base + i)
        pos += len(s)
    tail_start = pos
    for i, t in enumerate(tail):
        ids.append(t)
        seg.append(-1)
        logical.append(pos + i)
        stored.append(pos + i)
    as_t = lambda x: torch.tensor(x, dtype=torch.long)
    return Layout(as_t(ids), as_t(seg), as_t(logical), as_t(stored), bounds, tail_start, preamble, layout)


def check_supported(model) -> None:
    mt = getattr(model.config, "model_type", "?")
    if mt not in SUPPORTED:
        raise ValueError(f"architecture {mt!r} is not supported by the block-attention forward "
                         f"(supported: {', '.join(SUPPORTED)})")


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    # x [N, H, D]; cos/sin [N, D] (transformers' rotate_half convention, as its Llama uses).
    c, s = cos[:, None, :], sin[:, None, :]
    d = x.shape[-1] // 2
    rot = torch.cat((-x[..., d:], x[..., :d]), dim=-1)
    return x * c + rot * s


def _rope_tables(inner, positions: torch.Tensor, like: torch.Tensor):
    cos, sin = inner.rotary_emb(like, positions[None, :])
    return cos[0], sin[0]


def _attend(q, k, v, mask, scale):
    # q [Nq, H, D], k/v [Nk, Hkv, D], mask [Nq, Nk] bool or None (= causal, Nq == Nk).
    rep = q.shape[1] // k.shape[1]
    if rep > 1:
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
    q, k, v = (t.transpose(0, 1)[None] for t in (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else mask[None, None],
                                         is_causal=mask is None, scale=scale)
    return out[0].transpose(0, 1)


def block_forward(model, lay: Layout, rows: torch.Tensor | None = None) -> torch.Tensor:
    """Logits [len(rows), vocab] at the given flattened rows (default: every tail row).

    `model` is a transformers causal LM (or a PEFT model around one); its own modules are called,
    so LoRA adapters take part."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    check_supported(base)
    inner = base.model
    dev = next(base.parameters()).device
    ids = lay.ids.to(dev)
    n = ids.shape[0]
    cfg = base.config
    heads, kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    h = inner.embed_tokens(ids)

    t0 = lay.tail_start
    full = lay.layout == "full"
    cos_l, sin_l = _rope_tables(inner, lay.logical.to(dev), h)
    cos_s, sin_s = _rope_tables(inner, lay.stored.to(dev), h)
    # The tail (or, under full attention, every row) against every key at logical positions.
    q_from = 0 if full else t0
    tail_mask = None
    if not full:
        nt = n - t0
        tail_mask = torch.ones(nt, n, dtype=torch.bool, device=dev)
        tail_mask[:, t0:] = torch.tril(torch.ones(nt, nt, dtype=torch.bool, device=dev))
    anchored = lay.layout == "anchored" and lay.preamble and len(lay.bounds) > 1
    p_end = lay.bounds[0][1] if lay.preamble and lay.bounds else 0

    for layer in inner.layers:
        attn = layer.self_attn
        x = layer.input_layernorm(h)
        q = attn.q_proj(x).view(n, heads, head_dim)
        k = attn.k_proj(x).view(n, kv_heads, head_dim)
        v = attn.v_proj(x).view(n, kv_heads, head_dim)
        if hasattr(attn, "q_norm"):
            q, k = attn.q_norm(q), attn.k_norm(k)
        scale = getattr(attn, "scaling", head_dim ** -0.5)
        k_log = _rope(k, cos_l, sin_l)
        outs = []
        if not full:
            q_st = _rope(q, cos_s, sin_s)
            k_st = _rope(k, cos_s, sin_s)
            for d, (a, b) in enumerate(lay.bounds):
                if b == a:
                    continue
                if anchored and d > 0:
                    # The document after the preamble: keys [preamble | document], causal inside.
                    kk = torch.cat((k_st[:p_end], k_st[a:b]))
                    vv = torch.cat((v[:p_end], v[a:b]))
                    m = torch.ones(b - a, p_end + b - a, dtype=torch.bool, device=dev)
                    m[:, p_end:] = torch.tril(torch.ones(b - a, b - a, dtype=torch.bool, device=dev))
                    outs.append(_attend(q_st[a:b], kk, vv, m, scale))
                else:
                    outs.append(_attend(q_st[a:b], k_st[a:b], v[a:b], None, scale))
        q_tail = _rope(q[q_from:], cos_l[q_from:], sin_l[q_from:])
        outs.append(_attend(q_tail, k_log, v, tail_mask, scale))
        o = torch.cat(outs).reshape(n, heads * head_dim)
        h = h + attn.o_proj(o)
        h = h + layer.mlp(layer.post_attention_layernorm(h))

    if rows is None:
        rows = torch.arange(t0, n)
    h = inner.norm(h[rows.to(dev)])
    return base.lm_head(h)
