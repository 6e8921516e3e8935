"""Reading tasks over prose that is on every Debian machine with Python, none of it the benchmark's.

Sources (read at run time, nothing is downloaded):

  python-docs  the Python language reference's topics shipped with the interpreter itself
               (the standard library's pydoc_data/topics.py: what `help("assignment")` prints;
               79 topics, about 75,000 words on Python 3.11)
  licenses     the license texts of Debian's base-files package, /usr/share/common-licenses/*
               (GPL, LGPL, Apache-2.0, MPL, Artistic, BSD, GFDL, CC0)

Each source is cut into passages of about `words` words at paragraph and sentence boundaries,
titled by their origin ("Python reference: assignment, part 2"). A passage belongs to the
held-out part when the first byte of the SHA-256 of its origin's title ("Python reference:
assignment", so a topic is wholly in one part) is odd: training draws only from the other half,
and the held-out half gives the KL evaluation prompts. (Some license texts are near-copies of
each other, e.g. LGPL-2 and LGPL-2.1; they may fall on both sides.)

A task is k passages (one of them the target, the others distractors, in random order) and a
question made by one of these templates, whose sentence shapes share nothing with `bench
quality`'s kv/hop/agg generators (access codes, owners, deliveries) nor its held-out families
(attributes of people and places, bridges, tables):

  next-words   Which words come right after "<five words>" in the documents?  -> the next 3 words
  source       Which document contains the sentence "<sentence>"? Give its title.  -> its title
  continue     Quote the sentence that follows "<sentence>".  -> that sentence
  gist         (no answer) What does the document titled "<title>" explain? One sentence.
               The distillation objective trains on the teacher's own greedy reply; SFT skips it.
"""
from __future__ import annotations

import glob
import hashlib
import os
import random
import re

TEMPLATES = ("next-words", "source", "continue", "gist")


def _paragraphs(text):
    return [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", text) if p.strip()]


def _sentences(text):
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z(\"'])", text) if s.strip()]


def python_docs():
    try:
        from pydoc_data import topics
    except ImportError:
        return []
    return [(f"Python reference: {name}", text) for name, text in sorted(topics.topics.items())]


def licenses(root="/usr/share/common-licenses"):
    out = []
    for path in sorted(glob.glob(os.path.join(root, "*"))):
        if os.path.isfile(path) and not os.path.islink(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                out.append((f"{os.path.basename(path)} license", f.read()))
    return out


SOURCES = {"python-docs": python_docs, "licenses": licenses}


def passages(words=70, sources=("python-docs", "licenses")):
    """[{"title", "text", "source", "origin"}]: each source's texts cut at sentence boundaries into runs of
    about `words` words (prose only: lines that look like code or tables are dropped)."""
    out = []
    for src in sources:
        for title, text in SOURCES[src]():
            part, cur, n = 1, [], 0
            for para in _paragraphs(text):
                if sum(c.isalpha() for c in para) < 0.6 * len(para) or len(para.split()) < 8:
                    continue  # code, grammar rules, tables, headings
                for s in _sentences(para):
                    cur.append(s)
                    n += len(s.split())
                    if n >= words:
                        out.append({"title": f"{title}, part {part}", "text": " ".join(cur), "source": src,
                                    "origin": title})
                        part, cur, n = part + 1, [], 0
            if n >= words // 2:
                out.append({"title": f"{title}, part {part}", "text": " ".join(cur), "source": src, "origin": title})
    return out


def is_held_out(p) -> bool:
    return hashlib.sha256(p["origin"].encode("utf-8")).digest()[0] % 2 == 1


def split(ps):
    return [p for p in ps if not is_held_out(p)], [p for p in ps if is_held_out(p)]


def _question(p, template, rng):
    sents = [s for s in _sentences(p["text"]) if 6 <= len(s.split()) <= 40]
    if template == "next-words":
        w = p["text"].split()
        if len(w) < 12:
            return None
        i = rng.randrange(0, len(w) - 8)
        return (f"Which words come right after \"{' '.join(w[i:i + 5])}\" in the documents?",
                " ".join(w[i + 5:i + 8]))
    if template == "source":
        if not sents:
            return None
        return f"Which document contains the sentence \"{rng.choice(sents)}\"? Give its title.", p["title"]
    if template == "continue":
        all_s = _sentences(p["text"])
        pairs = [(a, b) for a, b in zip(all_s, all_s[1:]) if 6 <= len(a.split()) <= 40 and len(b.split()) <= 30]
        if not pairs:
            return None
        a, b = rng.choice(pairs)
        return f"Quote the sentence that follows \"{a}\".", b
    if template == "gist":
        return f"What does the document titled \"{p['title']}\" explain? Answer in one sentence.", None
    raise ValueError(template)


def tasks(ps, n, doc_counts, rng, templates=TEMPLATES, max_words=0):
    """n tasks over the passages ps: {"documents", "question", "answer" (None for gist), "template"}."""
    if len(ps) < 2:
        raise SystemExit("error: prose tasks: fewer than 2 passages found (python3's pydoc_data, "
                         "/usr/share/common-licenses)")
    out, tries = [], 0
    while len(out) < n and tries < 20 * n + 100:
        tries += 1
        k = min(rng.choice(doc_counts), len(ps))
        docs = rng.sample(ps, k)
        if max_words and sum(len(d["text"].split()) for d in docs) > max_words:
            docs = docs[:max(1, k - 1)]
        target = rng.choice(docs)
        template = templates[len(out) % len(templates)]
        made = _question(target, template, rng)
        if made is None:
            continue
        q, a = made
        out.append({"documents": [{"title": d["title"], "text": d["text"]} for d in docs], "question": q,
                    "answer": a, "template": template})
    return out
