"""The installed lazyattn package (scripts/test_python_package.sh installs the repaired wheel into a
fresh virtual environment and runs this suite from outside the checkout)."""

import pytest

import lazyattn

# The engine's thread count, shared with the server the comparison test starts: the same
# threads compute the same sums in the same order.
THREADS = 2


@pytest.fixture(scope="session")
def llm():
    # Plain lazy (quality="fast"): tests compare answers with references and with the server's,
    # and the default preset (balanced) swaps conditioned copies in as background work finishes.
    # test_quality.py tests the default itself.
    with lazyattn.LLM(threads=THREADS, quality="fast") as engine:
        yield engine
