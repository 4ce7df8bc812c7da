"""What the repository agent's `run_tests` shows (rlvr.repos.tools): a failure's
informative lines, and nothing that changes between two runs of the same code."""

from __future__ import annotations

from rlvr.repos.tools import failure_excerpt, stable_text

# pytest's short traceback of a failure whose assertion shows a function's repr, as two
# runs of the same test print it (xmltodict's test_streaming, seen in an evaluation)
RUN_A = (
    "tests/test_x.py:160: in test_streaming\n    assert cb.count == 3\n"
    "E   assert 0 == 3\nE    +  where 0 = <function test_streaming.<locals>.cb at 0x7efc16f896c0>.count"
)
RUN_B = RUN_A.replace("0x7efc16f896c0", "0x7feb8d6316c0")


def test_two_runs_of_the_same_failure_read_the_same() -> None:
    a, b = stable_text(failure_excerpt(RUN_A)), stable_text(failure_excerpt(RUN_B))
    assert a == b and "0x7e" not in a and "<function test_streaming.<locals>.cb at 0x...>.count" in a
    assert a.splitlines()[0] == "tests/test_x.py:160: in test_streaming"  # the frame stays, the source line goes
    # pytest's shortened repr keeps only an address's tail
    shortened = "E   assert {'a': 1} == {'a': \"{'b': ...07d2468ba0>}\"}"
    assert stable_text(shortened) == stable_text(shortened.replace("07d2468ba0", "132b4a4ee0"))
    assert stable_text(shortened).endswith("{'b': ...>}\"}")
    # a hex number the test itself prints is not an address and stays
    assert stable_text("E   assert 0x1f == 31") == "E   assert 0x1f == 31"


def test_ids_threads_durations_and_long_lines_read_the_same_in_every_run() -> None:
    """Addresses are dropped before a line is cut at 240 characters (a cut inside one
    would leave its head); a mock's decimal id, a thread's address and the run's duration
    go too; a string that only ends like an address tail (no digit) stays."""
    long_a = "E   assert " + "x" * 210 + " == <f at 0x7efc16f896c0>"  # the cut at 240 falls in the address
    long_b = long_a.replace("0x7efc16f896c0", "0x7feb8d6316c0")
    assert failure_excerpt(stable_text(long_a)) == failure_excerpt(stable_text(long_b))
    assert failure_excerpt(long_a) != failure_excerpt(long_b)  # cut first, the heads differ
    assert stable_text("<MagicMock name='m' id='140234567890123'>") == "<MagicMock name='m' id='...'>"
    assert stable_text("Current thread 0x00007f3a2b1c4740 (most recent call first)") == (
        "Current thread 0x... (most recent call first)"
    )
    assert stable_text("1 failed, 3 passed in 0.12s") == "1 failed, 3 passed in ..."
    assert stable_text("E   assert 'abc...facade>' == 'x'") == "E   assert 'abc...facade>' == 'x'"
