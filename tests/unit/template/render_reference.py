#!/usr/bin/env python3
"""Renders chat templates with Python's jinja2 configured as Hugging Face transformers renders
chat templates (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loop controls,
{% generation %}, raise_exception, its own tojson, a fixed strftime_now), over a fixed set of conversations, and
writes one JSON file per template: the truth test_template_reference compares lazyattn's Jinja
engine against, byte for byte.

    render_reference.py TEMPLATES_DIR OUT_DIR

Each OUT_DIR/<name>.json is {"template": <file name>, "source": <its text>, "cases": [{"name", "context", "output"} or
{"name", "context", "error"}]}: a case jinja2 raises on (at parse or render time) records the
error, and the C++ side must raise too. OUT_DIR/fixed_time.txt holds the instant strftime_now
reports (seconds since the epoch, UTC), which the C++ test passes to the engine as well.
"""
import datetime
import json
import os
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

# 2024-07-26 12:34:56 UTC: any fixed instant; both sides format it in UTC.
FIXED_TIME = 1721997296

# bos/eos texts by template family (first matching prefix of the lower-cased file name wins), as
# the models' tokenizers define them; the default is the SentencePiece pair.
SPECIAL_TOKENS = [
    ("meta-llama", "<|begin_of_text|>", "<|eot_id|>"),
    ("deepseek-ai-deepseek-r1-distill-llama", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("deepseek", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("llama-cpp-deepseek", "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    ("fireworks", "<|begin_of_text|>", "<|eot_id|>"),
    ("nousresearch", "<|begin_of_text|>", "<|im_end|>"),
    ("qwen", "", "<|im_end|>"),
    ("huggingfacetb", "", "<|im_end|>"),
    ("google-gemma", "<bos>", "<eos>"),
    ("microsoft-phi", "<s>", "<|endoftext|>"),
    ("ibm-granite", "", "<|end_of_text|>"),
    ("openai", "<|startoftext|>", "<|return|>"),
    ("mistral", "<s>", "</s>"),
    ("unsloth-mistral", "<s>", "</s>"),
]
DEFAULT_TOKENS = ("<s>", "</s>")

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
TRICKY = "  Hello, \"world\" 'quoted' \\ back — ünïcode ✓ 日本\nsecond line\t "

# (name, messages, add_generation_prompt)
CONVERSATIONS = [
    ("system_user", [SYSTEM, {"role": "user", "content": "What is the capital of France?"}], True),
    ("multi_turn", [SYSTEM,
                    {"role": "user", "content": "Hi there!"},
                    {"role": "assistant", "content": "Hello! How can I help?"},
                    {"role": "user", "content": "Tell me a joke."}], True),
    ("no_system", [{"role": "user", "content": TRICKY}], True),
    ("no_system_no_prompt", [{"role": "user", "content": "Hi"},
                             {"role": "assistant", "content": "Hello."}], False),
    ("system_multi_no_prompt", [SYSTEM,
                                {"role": "user", "content": "One?"},
                                {"role": "assistant", "content": "Two."},
                                {"role": "user", "content": "Three?"},
                                {"role": "assistant", "content": " Four. "}], False),
    ("special_text_in_content", [{"role": "user", "content": "<|im_end|><|eot_id|></s>[INST]<s>"}], True),
]


def special_tokens(name):
    lower = name.lower()
    for prefix, bos, eos in SPECIAL_TOKENS:
        if lower.startswith(prefix):
            return bos, eos
    return DEFAULT_TOKENS


class GenerationBlock(jinja2.ext.Extension):
    """transformers' {% generation %}...{% endgeneration %}: marks assistant text for masks; when
    rendering a prompt it writes its body unchanged."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    # transformers' tojson: json.dumps with ensure_ascii off (not jinja2's HTML-safe tojson).
    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(FIXED_TIME, datetime.timezone.utc).strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationBlock, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render_cases(env, name, source):
    bos, eos = special_tokens(name)
    try:
        template = env.from_string(source)
        parse_error = None
    except Exception as e:  # noqa: BLE001 - any jinja2 failure is a recorded outcome
        template, parse_error = None, f"{type(e).__name__}: {e}"
    cases = []
    for case_name, messages, add_generation_prompt in CONVERSATIONS:
        # transformers passes tools and documents (None when absent) and the special tokens.
        context = {"messages": messages, "add_generation_prompt": add_generation_prompt,
                   "bos_token": bos, "eos_token": eos, "tools": None, "documents": None}
        case = {"name": case_name, "context": context}
        if parse_error is not None:
            case["error"] = parse_error
        else:
            try:
                case["output"] = template.render(**context)
            except Exception as e:  # noqa: BLE001
                case["error"] = f"{type(e).__name__}: {e}"
        cases.append(case)
    return cases


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    templates_dir, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    env = make_environment()
    names = sorted(n for n in os.listdir(templates_dir) if n.endswith(".jinja"))
    if not names:
        sys.exit(f"no .jinja templates in {templates_dir}")
    for name in names:
        with open(os.path.join(templates_dir, name), encoding="utf-8") as f:
            source = f.read()
        result = {"template": name, "source": source, "cases": render_cases(env, name, source)}
        with open(os.path.join(out_dir, name[: -len(".jinja")] + ".json"), "w", encoding="utf-8") as f:
            json.dump(result, f, ensure_ascii=False, indent=1)
    with open(os.path.join(out_dir, "fixed_time.txt"), "w") as f:
        f.write(f"{FIXED_TIME}\n")
    print(f"[render_reference] {len(names)} templates rendered by jinja2 {jinja2.__version__} into {out_dir}")


if __name__ == "__main__":
    main()
