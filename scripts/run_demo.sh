#!/usr/bin/env bash
# The main job (`make run`): a chat answer, with the embedded SmolLM2 model, to a question about
# two short documents pasted into the prompt.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/lazyattn

DOC1="Les films du losange is a film production company founded by Barbet Schroeder and Éric Rohmer in 1962. The company funds and distributes many films from the French nouvelle vague era."
DOC2="Éric Rohmer was a French film director, film critic, journalist and novelist. He edited the film magazine Cahiers du cinéma from 1957 to 1963."
QUESTION="Which magazine did a founder of Les films du losange edit?"

echo "== lazyattn info"
$BIN info
echo
echo "== Documents"
echo "[1] $DOC1"
echo "[2] $DOC2"
echo
echo "== Question: $QUESTION"
echo "== Answer (streamed):"
$BIN generate --chat --max-tokens 64 \
  --system "Answer the question using only the documents. Be brief." \
  --prompt "Document 1: $DOC1
Document 2: $DOC2

Question: $QUESTION"
