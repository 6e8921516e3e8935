"""Texts for the tokenizer golden file (tests/data/golden_tokens.json), see scripts/make_golden.py.

TEXTS is a list of (text, add_special, parse_special) cases. Most texts are plain and are tokenized
with add_special=False, parse_special=False; a few also run with the other flag combinations.
The model's add_bos is false, so add_special=True must give the same ids as add_special=False.
Keep the order stable: tests refer to cases by index only in error messages, but diffs stay small.
"""

LONG_PARAGRAPH = (
    "The history of computing is a story of abstraction layered upon abstraction. Early machines "
    "were programmed by physically rewiring circuits; later, stored-program computers let engineers "
    "write instructions as numbers in memory. Assemblers turned those numbers into mnemonics, and "
    "compilers turned whole expressions into sequences of instructions. Each layer hid details that "
    "had once demanded careful attention, and each new generation of programmers took the previous "
    "generation's hard-won tricks for granted. Today a single line of Python may trigger millions of "
    "machine operations, executed out of order, speculatively, across several cores, with caches "
    "predicting what will be needed next. Yet the fundamentals remain: data must move, arithmetic "
    "must be performed, and the cost of moving data usually dominates the cost of computing on it. "
    "Engineers who remember this write faster software, whether they work on databases, games, or "
    "the inference engines that run today's language models on laptops and phones."
)

PLAIN = [
    # --- English sentences
    "Hello world",
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "I can't believe it's already 5 o'clock!",
    "What is the capital of France? Paris, of course.",
    "HELLO WORLD IN CAPITALS AND MiXeD cAsE",
    "e-mail: john.doe@example.com, web: https://www.example.org/path?q=1&r=two#frag",
    "a",
    " a",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism",
    # --- contractions
    "It's John's book; they're here, we've seen it, I'd go, you'll see, I'm sure, don't.",
    "IT'S JOHN'S; THEY'RE; WE'VE; I'D; YOU'LL; I'M; DON'T",
    "'s 't 're 've 'm 'll 'd 'LL 'S 'T 'RE",
    "rock 'n' roll, ''quoted'' and 'single'",
    # --- code
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "import numpy as np\nx = np.arange(10)[::-1]  # reversed\nprint(f\"{x.sum()=}\")",
    "#include <vector>\n\nint main() {\n\tstd::vector<int> v{1, 2, 3};\n\treturn v.size() > 2 ? 0 : 1;\n}\n",
    "template <typename T>\nconstexpr T square(T x) noexcept { return x * x; }",
    '{"name": "lazyattn", "version": [0, 1, 2], "nested": {"ok": true, "value": null}}',
    '{\n  "a": 1,\n  "b": [\n    "x",\n    "y"\n  ]\n}',
    "for (int i = 0; i < n; ++i) { sum += a[i] * b[i]; }",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
    # --- numbers and dates
    "1",
    "12",
    "123",
    "1234",
    "1234567",
    "3.14159",
    "1,000,000",
    "-42 +7 0.5e-10 1e6 0x1F 007",
    "2024-01-15",
    "15/01/2024 at 13:45:30",
    "January 1st, 1999 and 12/31/2099",
    "Phone: +1 (555) 123-4567",
    "$1,234.56 or 99% or 3/4",
    # --- whitespace runs
    " ",
    "  ",
    "   ",
    "        ",
    "\t",
    "\t\t",
    " \t \t ",
    "   leading spaces",
    "trailing spaces   ",
    "  both sides  ",
    "word1    word2\t\tword3 \t word4",
    "    indented four\n        indented eight",
    # --- newlines
    "\n",
    "\n\n",
    "\r\n",
    "\n\n\n\n\n\n",
    "line one\nline two\n\nline four\r\nline five\n",
    "trailing newline\n",
    "\n leading newline then space",
    " \n \n\t\n",
    # --- emoji
    "Hello 👋 world 🌍!",
    "😀😃😄😁",
    "👨‍👩‍👧‍👦 family, 👩🏽‍💻 coder, 🏳️‍🌈 flag",
    "🇫🇷 🇯🇵 🇺🇸 🇧🇷",
    "❤️ ✨ ☕ ✔",
    # --- CJK
    "你好，世界！今天天气很好。",
    "日本語のテキストです。カタカナとひらがな、漢字。",
    "안녕하세요, 세계! 한국어 문장입니다.",
    "中文English混合mixed text 123",
    # --- accented names and other scripts
    "Éric Rohmer",
    "Zoë and Chloë",
    "Antonín Dvořák",
    "São Paulo, Zürich, Kraków, Reykjavík, Ångström",
    "naïve café façade résumé",
    "مرحبا بالعالم",
    "שלום עולם",
    "Привет, мир! Как дела?",
    "Γειά σου Κόσμε",
    "नमस्ते दुनिया",
    "\ufb01 \ufb02 \u00c5 A\u030a \u2460\u2461\u2462 \u00bd",  # ligatures, composed vs decomposed, circled digits
    # --- misc punctuation / symbols
    "!!! ??? ... --- ___ *** ### @@@",
    "a\u00a0b\u2009c\u200bd",  # nbsp, thin space, zero width space
    "~`!@#$%^&*()_+-={}[]|\\:;\"'<>,.?/",
    # --- special tokens written in text (plain: parse_special=False)
    "<|im_start|>user\nhi<|im_end|>",
    "<|endoftext|>",
    "text before<|endoftext|>text after",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start",  # partial special token
    "<|unknown_special|>",
    # --- empty and long
    "",
    LONG_PARAGRAPH,
]

# Cases that also run with other flags: (text, add_special, parse_special)
EXTRA = [
    ("<|im_start|>user\nhi<|im_end|>", False, True),
    ("<|endoftext|>", False, True),
    ("text before<|endoftext|>text after", False, True),
    ("<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>assistant\n", False, True),
    ("<|im_start", False, True),
    ("<|unknown_special|>", False, True),
    ("<|im_start|><|im_end|><|endoftext|>", False, True),
    (" <|im_start|> spaced <|im_end|> ", False, True),
    ("<|im_start|>user\nhi<|im_end|>", True, True),
    ("<|im_start|>user\nhi<|im_end|>", True, False),
    ("Hello world", True, False),
    ("Hello world", True, True),
    ("", True, False),
    ("", True, True),
    ("", False, True),
    ("Hello world", False, True),
]

TEXTS = [(t, False, False) for t in PLAIN] + EXTRA
