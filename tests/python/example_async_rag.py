"""docs/python.md's async RAG example, verbatim between the markers (test_docs_example.py runs
it): a retriever and the engine in one event loop, questions answered concurrently over shared
cached passages, one answer streamed with its tokens' logprobs."""

# --- docs/python.md: async RAG example ---
import asyncio

import lazyattn

PASSAGES = {
    "lyon": "Lyon is a city in France where the Rhone and the Saone rivers meet.",
    "rhone": "The Rhone flows from the Swiss Alps through Lyon to the Mediterranean Sea.",
    "paris": "Paris lies on the Seine, far to the north of Lyon.",
}


async def retrieve(question: str) -> list:
    """Stands in for a vector store's async client: the passages that share a word."""
    await asyncio.sleep(0)
    words = set(question.lower().replace("?", "").split())
    return [text for key, text in PASSAGES.items() if key in words] or list(PASSAGES.values())


async def answer(llm: lazyattn.AsyncLLM, question: str) -> lazyattn.Completion:
    passages = await retrieve(question)
    messages = [{"role": "user", "content": question + " Answer in one sentence."}]
    return await llm.chat(messages, documents=passages, max_tokens=32)


async def main() -> list:
    async with lazyattn.AsyncLLM(threads=2) as llm:  # the embedded SmolLM2-135M-Instruct
        questions = ["Which rivers meet in Lyon?", "Where does the Rhone flow?", "Which river is in Paris?"]
        # One engine, every question at once: they run in the same engine steps, and a passage
        # two questions share is computed once and read from the cache by the other.
        answers = await asyncio.gather(*(answer(llm, q) for q in questions))
        for q, a in zip(questions, answers):
            print(q, "->", a.text, f"({a.usage.cached_tokens} prompt tokens from the cache)")
        # Streamed, with each token's logprob (how sure the model was) and 2 alternatives.
        stream = llm.stream("The Rhone flows into the", documents=[PASSAGES["rhone"]], max_tokens=8, top_logprobs=2)
        async for chunk in stream:
            print(repr(chunk), [round(lp.logprob, 2) for lp in chunk.logprobs])
        return answers + [stream.result]


if __name__ == "__main__":
    asyncio.run(main())
# --- end of the example ---
