#!/usr/bin/env bash
# The main job (`make run`): the RAG demo with the embedded SmolLM2 model. Questions from the
# 2WikiMultihopQA sample, each with its 10 retrieved passages as documents; every question is
# asked twice, the passages re-shuffled the second time, with LazyAttention (`lazy`) next to
# prefix caching (`prefix`). lazy reuses every cached passage wherever it sits; prefix only a
# common prefix.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/lazyattn

echo "== Model"
$BIN info
echo
echo "== RAG demo: data/2wiki_sample.jsonl, 3 questions, 2 runs each, lazy vs prefix"
$BIN demo --data data/2wiki_sample.jsonl --questions "${DEMO_QUESTIONS:-3}" --runs 2 --modes lazy prefix
