"""Fresh test cases drawn at run time from the generator that made a task (hidden tests,
`rlvr.rewards.hidden_tests`).

A task names its drawer in `metadata.draw` as `KIND` or `KIND:ARG` (`stdio_problem:
sum_numbers`, `data_question:q_units_region`). A drawer is a function `(task, arg, rng, n)
-> cases` (`arg`: the text after the colon, "" without one), each case `{"stdin": ...,
"stdout": ...}` with the expected output computed by the generator's own solver (trusted
code: it runs here, not in the sandbox), at most `2 * n` of them, none equal to a
visible input. The same `rng` state gives the same cases.

    @register_drawer("my_family")
    def draw(task, arg, rng, n): ...

Built-in kinds are imported on first use (`BUILTIN`, in `rlvr.tasks.problems`: pure
Python, importing nothing of rlvr's beyond `rlvr.types` and this module; the layering test
holds them to it). A plugin registers its own kind the same way; `NoDrawer` names an
unknown kind.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable

from rlvr.types import Task

Case = dict[str, str]
Drawer = Callable[[Task, str, random.Random, int], list[Case]]
DRAWERS: dict[str, Drawer] = {}
BUILTIN = {
    "stdio_problem": "rlvr.tasks.problems.catalogue",
    "data_question": "rlvr.tasks.problems.sales",
}


class NoDrawer(KeyError):
    """The task names a drawer that no module registers."""


def register_drawer(kind: str) -> Callable[[Drawer], Drawer]:
    def deco(fn: Drawer) -> Drawer:
        if kind in DRAWERS and DRAWERS[kind] is not fn:
            raise ValueError(f"a drawer named '{kind}' is already registered")
        DRAWERS[kind] = fn
        return fn

    return deco


def drawer_kind(task: Task) -> tuple[str, str] | None:
    """(kind, argument) of the task's `metadata.draw`, or None when it names none."""
    spec = task.metadata.get("draw")
    if not isinstance(spec, str) or not spec:
        return None
    kind, _, arg = spec.partition(":")
    return kind, arg


def draw_cases(task: Task, rng: random.Random, n: int) -> list[Case]:
    """Up to `2 * n` new cases for the task from its drawer; [] when it names none."""
    named = drawer_kind(task)
    if named is None:
        return []
    kind, arg = named
    if kind not in DRAWERS and kind in BUILTIN:
        importlib.import_module(BUILTIN[kind])
    if kind not in DRAWERS:
        known = sorted(set(DRAWERS) | set(BUILTIN))
        raise NoDrawer(f"task {task.id}: field 'metadata.draw': no drawer '{kind}' (known: {', '.join(known)})")
    shown = {str(c.get("stdin", "")) for c in task.tests.get("cases", [])}
    out: list[Case] = []
    for case in DRAWERS[kind](task, arg, rng, n):
        if case["stdin"] not in shown and len(out) < 2 * n:
            shown.add(case["stdin"])
            out.append(case)
    return out
