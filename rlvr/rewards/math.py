"""Math answers: equivalence of the model's final answer with the reference, decided by
`math-verify` (LaTeX and plain expressions, sets, intervals, numbers in any notation).

The value is 1.0 when equivalent, else 0.0; the details carry both parsed forms. A parse
failure is 0.0 with the reason, never an exception. math-verify's own time limits use
SIGALRM, which works only in the main thread: elsewhere (environment worker threads) they
are switched off, so keep answers to what a bounded parse handles.
"""

from __future__ import annotations

import logging
import threading

from math_verify import parse, verify

from rlvr.rewards.base import RewardComponent

# its one warning, that the time limits are off (in every worker thread, as said above),
# would otherwise reach every user's terminal
logging.getLogger("math_verify").setLevel(logging.ERROR)


def math_reward(answer: str, reference: str) -> RewardComponent:
    limit = 5 if threading.current_thread() is threading.main_thread() else None
    try:
        gold = parse(reference if "$" in reference or "\\" in reference else f"${reference}$", parsing_timeout=limit)
        pred = parse(answer, parsing_timeout=limit)
    except Exception as e:  # math-verify raises on inputs it cannot handle
        return RewardComponent(0.0, {"error": f"{type(e).__name__}: {e}"[:300]})
    if not gold:
        return RewardComponent(0.0, {"error": f"reference {reference!r} could not be parsed"})
    if not pred:
        return RewardComponent(0.0, {"error": "no answer found in the reply"})
    ok = bool(verify(gold, pred, timeout_seconds=limit))
    return RewardComponent(1.0 if ok else 0.0, {"parsed": str(pred[0])[:200], "reference": str(gold[0])[:200]})
