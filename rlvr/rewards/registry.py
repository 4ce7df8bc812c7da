"""Reward terms by name: what a `reward.terms` entry may weigh, and what the scorer
computes for each trajectory.

    @register_reward("docstrings", applies=lambda task, traj, ctx: is_code_task(task), always=False)
    def docstrings(task, traj, ctx) -> RewardComponent: ...

A term is a plain function `(task, trajectory, context) -> RewardComponent` (or a float),
with no trainer imports; `applies(task, trajectory, context)` says whether it is computed
for this episode (a Python analysis skips a math reply). `always=True` terms are computed
and logged for every episode they apply to, whether or not a term weighs them (cheap
ones: format, length, security); `always=False` ones only when a term names them (they
cost a sandbox run or a slow import: efficiency, math). A plugin module registers its own
the same way, and its name is then valid in `reward.terms` (checked when the run starts,
with plugins loaded). "completion" is the environment's own verdict and is not computed
here; an environment's own components (itops 'safety', ...) are named by the environment.

Terms run per trajectory, in registration order (which is the order the breakdown lists
them). Terms that need a whole group (a batched model, a judge) are group terms:

    @register_group_reward("learned", check=needs_a_model)
    def learned(tasks, trajs, ctx) -> list[float | None]: ...   # one score per trajectory

A group term runs after the per-trajectory stage and after the hack findings, only when
a term weighs it, and is combined as a guarded bonus (`rlvr.rewards.guard`): its scores
are scaled within the group and the bonus is kept below the smallest gap between the
group's verifiable totals, so within a group a higher verifiable reward always means a
higher total. `check(reward_config)` runs when the run starts (a missing model path is a
config error then, not a crash at the first step).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from rlvr.rewards.base import RewardComponent
from rlvr.types import ExecutionResult, Task, Trajectory

if TYPE_CHECKING:
    from rlvr.config import RewardConfig

COMPLETION = "completion"
"""The environment's own verdict (its reward total, or its 'completion' component)."""


@dataclass(frozen=True)
class TermContext:
    """What a term may read besides the task and the trajectory."""

    cfg: RewardConfig
    max_new_tokens: int
    wanted: frozenset[str]  # the names the run's terms weigh
    reference_run: Callable[[Task], ExecutionResult | None]  # the reference's run on the same tests (cached)
    eligible: tuple[bool, ...] | None = None
    """For a group term: which of the group's replies can earn its bonus (None: all). A
    costly term may score only those and give None for the rest."""


class TermFn(Protocol):
    def __call__(self, task: Task, traj: Trajectory, ctx: TermContext) -> RewardComponent | float: ...


Applies = Callable[[Task, Trajectory, TermContext], bool]


@dataclass(frozen=True)
class RewardTerm:
    name: str
    fn: TermFn
    applies: Applies
    always: bool
    doc: str

    def compute(self, task: Task, traj: Trajectory, ctx: TermContext) -> RewardComponent:
        out = self.fn(task, traj, ctx)
        return out if isinstance(out, RewardComponent) else RewardComponent(float(out))


REWARDS: dict[str, RewardTerm] = {}


class GroupTermFn(Protocol):
    def __call__(
        self, tasks: Sequence[Task], trajs: Sequence[Trajectory], ctx: TermContext
    ) -> Sequence[float | None]: ...


@dataclass(frozen=True)
class GroupTerm:
    """A term scored over a whole group at once: one raw score per trajectory (None: not
    scored, e.g. a conversation over the model's length; it gets no bonus)."""

    name: str
    fn: GroupTermFn
    check: Callable[[RewardConfig], None] | None
    doc: str


GROUP_REWARDS: dict[str, GroupTerm] = {}


def _everywhere(task: Task, traj: Trajectory, ctx: TermContext) -> bool:
    return True


def register_reward(name: str, *, applies: Applies | None = None, always: bool = True) -> Callable[[TermFn], TermFn]:
    """Register `fn` as the reward term `name` (a decorator). Refuses a name taken, or
    not an identifier (the term is addressed as `reward.terms[i].name` and in metrics)."""

    def deco(fn: TermFn) -> TermFn:
        if not name.isidentifier():
            raise ValueError(f"reward term name {name!r} is not an identifier")
        if name in REWARDS or name in GROUP_REWARDS or name == COMPLETION:
            raise ValueError(f"reward term {name!r} is already registered")
        doc = (fn.__doc__ or "").strip().split("\n\n")[0]
        REWARDS[name] = RewardTerm(name, fn, applies or _everywhere, always, " ".join(doc.split()))
        return fn

    return deco


def register_group_reward(
    name: str, *, check: Callable[[RewardConfig], None] | None = None
) -> Callable[[GroupTermFn], GroupTermFn]:
    """Register `fn` as the group term `name` (a decorator); `check(reward_config)` raises
    ConfigError when the run's config cannot serve it."""

    def deco(fn: GroupTermFn) -> GroupTermFn:
        if not name.isidentifier():
            raise ValueError(f"reward term name {name!r} is not an identifier")
        if name in REWARDS or name in GROUP_REWARDS or name == COMPLETION:
            raise ValueError(f"reward term {name!r} is already registered")
        doc = (fn.__doc__ or "").strip().split("\n\n")[0]
        GROUP_REWARDS[name] = GroupTerm(name, fn, check, " ".join(doc.split()))
        return fn

    return deco


def reward_names() -> list[str]:
    """Every name a term may weigh: the environment's verdict and each registered term."""
    import rlvr.rewards.terms  # noqa: F401  (the built-in terms register themselves)

    return [COMPLETION, *REWARDS, *GROUP_REWARDS]
