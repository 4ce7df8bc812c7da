"""Which drawn inputs become a step's hidden tests: a greedy cover of what each input
exercises (issue 33: hidden tests a rule fitted to the examples cannot pass).

A few random inputs rarely include the one that tells a right program from one that is
right only where the examples reach: a pair of values straddling the examples' range, a
list of the one length the examples skip, a bracket string with the examples' brackets
in another order. So each drawn input is described by the *features* it exercises, and
the kept ones (all of them under the default `reward.hidden_tests_max`; the order
matters where fewer are kept) cover as many features as they can:

- its answer (a minor feature: no constant passes a set with two answers, and where no
  other feature is left a round alternates the answers);
- `flip`: an edit or reordering of an example whose answer differs from the example's
  (the boundary a fitted rule draws in the wrong place);
- `reorder`: the same elements as an example in another order, answer differing;
- `length`: each length of a sequence argument up to the examples' longest, and one
  past it (small-scope coverage: a size-keyed patch skips one);
- `beyond`: an integer below or above every example of its argument;
- `kill`: an input on which an alternate program differs from the reference: one of the
  reference's own mutants (`rlvr.tasks.mutate`) or, for a repair task, the buggy program
  it was made from (a patch that fixes the shown failure and not the bug).

Selection is greedy: each pick covers the most *major* features not yet covered (every
kind but the answer), ties going to the most features of any kind and then to the
earliest drawn; the answer is a minor feature because nearly every input of a function
with many values has one of its own, so counting it alike let an input that covers only
its answer crowd out a rare shape or kill. When no input adds a feature, a new round
starts with nothing covered, so the set keeps cycling through answers and features
until `n` are kept. Pure and deterministic: the same candidates in the same order give
the same picks.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence


def _never(_: Hashable) -> bool:
    return False


def select_covering(
    features: Sequence[frozenset[Hashable]], n: int, *, minor: Callable[[Hashable], bool] = _never
) -> list[int]:
    """Indices (in pick order) of up to `n` candidates covering the most features, greedily,
    round after round; `minor` says which features count only to break ties (see the
    module's docstring)."""
    major = [frozenset(f for f in fs if not minor(f)) for fs in features]
    left = list(range(len(features)))
    covered: set[Hashable] = set()
    picks: list[int] = []
    while left and len(picks) < n:
        best, gain = left[0], (-1, -1)
        for i in left:
            g = (len(major[i] - covered), len(features[i] - covered))
            if g > gain:
                best, gain = i, g
        if gain[1] <= 0 and covered:  # nothing new: a new round
            covered = set()
            continue
        picks.append(best)
        left.remove(best)
        covered |= features[best]
    return picks
