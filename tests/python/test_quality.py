"""The quality preset of the in-process engine (docs/api.md, "Quality presets"): with none named the
LLM runs `balanced`, the default chosen on issue 63's evidence (conditioned copies where they
exist, damped sinks); `fast` is plain lazy; a name that is no preset is the caller's ValueError.
The other test files pin quality="fast" (conftest.py): they compare answers with plain lazy's."""

import pytest

import lazyattn


def test_the_default_preset_is_balanced():
    with lazyattn.LLM(threads=1) as llm:
        info = llm.info()
        assert info["quality"] == "balanced", info
        reuse = info["document_reuse"].split("+")
        assert "neighbours=1@ready" in reuse and "damp=16:-2" in reuse, info
        # Documents are answered under it as under any other setting.
        out = llm.generate("Which metal has the symbol Au?", documents=["Gold has the symbol Au."], max_tokens=4)
        assert out.usage.prompt_tokens > 0 and out.finish_reason in ("stop", "length")


def test_fast_is_plain_lazy_and_a_request_still_says_its_own():
    with lazyattn.LLM(threads=1, quality="fast") as llm:
        info = llm.info()
        assert info["quality"] == "fast" and info["document_reuse"] == "plain", info
    with lazyattn.LLM(threads=1, quality="accurate", document_reuse="plain") as llm:
        info = llm.info()  # --document-reuse wins over the preset's reuse; the preset still names the work
        assert info["quality"] == "accurate" and info["document_reuse"] == "plain", info


def test_a_preset_that_does_not_exist_is_a_value_error():
    with pytest.raises(ValueError, match="quality"):
        lazyattn.LLM(threads=1, quality="best")
