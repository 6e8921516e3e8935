"""docs/python.md's cited JSON answer, verbatim between the markers (test_docs_example.py runs
it): a RAG question over numbered passages answered as a JSON object, the answer and the ids of
the passages it cites, constrained by a JSON schema and checked before use."""

# --- docs/python.md: cited JSON answer ---
import json

import lazyattn

PASSAGES = [
    "Lyon is a city in France where the Rhone and the Saone rivers meet.",
    "The Rhone flows from the Swiss Alps through Lyon to the Mediterranean Sea.",
    "Paris lies on the Seine, far to the north of Lyon.",
]
# The shape the application parses: the answer, and the passages it rests on by their ids.
CITED_ANSWER = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "minLength": 1, "maxLength": 120},
        "citations": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0, "maximum": len(PASSAGES) - 1},
            "minItems": 1,
            "maxItems": 3,
        },
    },
    "required": ["answer", "citations"],
    "additionalProperties": False,
}


def cited_answer(llm: lazyattn.LLM, question: str) -> dict:
    documents = [f"Passage {i}: {text}" for i, text in enumerate(PASSAGES)]  # each cached once
    messages = [
        {"role": "system", "content": "Answer from the passages. Reply in JSON with the answer and the "
                                      "numbers of the passages you used as citations."},
        {"role": "user", "content": question},
    ]
    out = llm.chat(messages, documents=documents, json_schema=CITED_ANSWER, max_tokens=160)
    if out.finish_reason != "stop":  # "length": cut before the object closed, so not a valid answer
        raise RuntimeError(f"no complete answer within {len(out.token_ids)} tokens: {out.text!r}")
    reply = json.loads(out.text)  # the grammar allowed only documents the schema accepts; checked anyway
    assert set(reply) == {"answer", "citations"} and isinstance(reply["answer"], str) and reply["answer"]
    assert 1 <= len(reply["citations"]) <= 3 and all(0 <= i < len(PASSAGES) for i in reply["citations"])
    return reply


def main() -> list:
    with lazyattn.LLM(threads=2) as llm:  # the embedded SmolLM2-135M-Instruct
        replies = []
        for question in ["Which rivers meet in Lyon?", "Where does the Rhone end?"]:
            reply = cited_answer(llm, question)
            print(question, "->", reply["answer"])
            for i in sorted(set(reply["citations"])):
                print(f"  [{i}] {PASSAGES[i]}")
            replies.append(reply)
        return replies


if __name__ == "__main__":
    main()
# --- end of the example ---
