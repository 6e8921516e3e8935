"""docs/python.md's tool-calling RAG loop, verbatim between the markers (test_docs_example.py runs
it): the model asks for search(query), the application retrieves passages from a small local
corpus and sends them back as documents (cached like any other), and the model answers; a second
question over the same passages reads them from the cache."""

# --- docs/python.md: tool-calling RAG loop ---
import re

import lazyattn

CORPUS = [
    "Lyon is a city in France where the Rhone and the Saone rivers meet.",
    "The Rhone flows from the Swiss Alps through Lyon to the Mediterranean Sea.",
    "The Saone rises in the Vosges and joins the Rhone at Lyon.",
    "Paris lies on the Seine, far to the north of Lyon.",
    "Tea is grown on the hillsides of Darjeeling in India.",
]
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the library for passages.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "maxLength": 60, "description": "the key words of the question"}},
            "required": ["query"],
            "additionalProperties": False,
        },
    },
}


def words(text: str) -> set:
    return {w for w in re.findall(r"\w+", text.lower()) if len(w) > 3}


def search(query: str, k: int = 3) -> list:
    """The application's retrieval: the k passages sharing the most words with the query."""
    return sorted(CORPUS, key=lambda passage: -len(words(query) & words(passage)))[:k]


def answer(llm: lazyattn.LLM, question: str) -> lazyattn.Completion:
    messages = [
        {"role": "system", "content": "Search for the key words of the user's question, then answer from the passages."},
        {"role": "user", "content": question},
    ]
    # Turn 1: the model must call a tool (tool_choice "required": a grammar makes the call valid).
    asked = llm.chat(messages, tools=[SEARCH], tool_choice="required", parallel_tool_calls=False, max_tokens=64)
    call = asked.tool_calls[0]  # ToolCall(id, name, arguments); call.args is the parsed dict
    passages = search(call.args["query"])
    # Turn 2: the call and its result go back; the passages travel as documents, each cached once.
    messages += [
        asked.message,
        {"role": "tool", "tool_call_id": call.id, "content": f"{len(passages)} passages (given as documents)."},
    ]
    out = llm.chat(messages, documents=passages, tools=[SEARCH], tool_choice="none", max_tokens=48)
    print(f"{question} -> search({call.args['query']!r}) -> {out.text.strip()!r}")
    print(f"  segments (the passages, the system message): {out.usage.segments_hit} read from the cache, "
          f"{out.usage.segments_missed} computed")
    return out


def main() -> list:
    with lazyattn.LLM(threads=2) as llm:  # the embedded SmolLM2-135M-Instruct
        before = llm.stats()
        outs = [answer(llm, q) for q in ["Which rivers meet in Lyon?", "Where does the Rhone flow to?"]]
        after = llm.stats()
        print(f"cache: {after['segment_hits'] - before['segment_hits']} document hits, "
              f"{after['prompt_tokens_reused'] - before['prompt_tokens_reused']} prompt tokens reused")
        return outs


if __name__ == "__main__":
    main()
# --- end of the example ---
