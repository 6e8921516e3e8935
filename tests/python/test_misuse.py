"""The Python API misused as real programs misuse it: the LLM collected while its request still
runs, a process forked after the engine started, huge inputs. Each ends in an answer or a clear
error, never a crash or a hang."""

import gc
import os
import time

import pytest

import lazyattn


def _wait_exit(pid, timeout_s):
    """The child's exit code; None when it has not exited within the timeout (it is then killed)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def test_an_llm_collected_while_its_stream_runs():
    llm = lazyattn.LLM(threads=1, kv_cache_mb=64)
    stream = llm.stream("Count: 1, 2, 3,", max_tokens=200, ignore_eos=True)
    first = next(stream)
    del llm
    gc.collect()
    # The request keeps the engine alive; the collected LLM's close cancels it: it ends, cancelled
    # or finished, and never hangs or crashes.
    rest = list(stream)
    assert first is not None and isinstance(rest, list)
    assert stream.result is not None and stream.result.finish_reason in ("cancelled", "length")


def test_fork_after_load_is_refused_in_the_child_and_the_parent_goes_on(llm):
    assert llm.generate("Hello", max_tokens=2).token_ids
    pid = os.fork()
    if pid == 0:  # the child: the engine's thread does not exist here; it never returns to pytest
        code = 3
        try:
            try:
                llm.generate("Hello", max_tokens=2)
                code = 4  # answered from a process without the engine thread: impossible
            except lazyattn.Error as e:
                code = 0 if "fork" in str(e) else 5
            llm.close()  # must not join a thread that is not here
        except BaseException:  # noqa: BLE001 - any other outcome is the failure reported
            code = 6
        finally:
            os._exit(code)
    assert _wait_exit(pid, 60) == 0, "the child hung, crashed or answered"
    assert llm.generate("Hello", max_tokens=2).token_ids  # the parent's engine is untouched


def test_a_forked_child_that_exits_normally_does_not_hang(llm):
    assert llm.generate("Hello", max_tokens=2).token_ids
    pid = os.fork()
    if pid == 0:
        # A normal exit runs atexit's handler, which closes every LLM: it must not wait for the
        # parent's thread. Run here by hand, then leave (a SystemExit would unwind into pytest).
        code = 1
        try:
            lazyattn._llm._close_all()
            code = 0
        finally:
            os._exit(code)
    assert _wait_exit(pid, 60) == 0


def test_huge_inputs_are_refused_quickly(llm):
    huge = "word " * 2_000_000  # 10 MB: far past the context
    started = time.monotonic()
    with pytest.raises(ValueError):
        llm.generate(huge, max_tokens=1)
    with pytest.raises(ValueError):
        llm.generate("Q?", documents=[huge], max_tokens=1)
    with pytest.raises((ValueError, TypeError)):
        llm.generate("Q?", documents=["x"] * 100_000, max_tokens=1)
    # Refused by their size, not after tokenizing 10 MB (a generous bound: no timing is asserted
    # beyond "not minutes").
    assert time.monotonic() - started < 120
    assert llm.generate("Hello", max_tokens=2).token_ids
