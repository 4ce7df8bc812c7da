"""The episode protocol and the domain → environment registry.

An environment instance lives for one episode. Both methods are coroutines, so that the
runner can drive many episodes at once while each waits on a sandbox or a simulator:

- `await reset(task)` gives the opening messages;
- `await step(reply)` judges the policy's reply and returns a `StepResult`: the messages
  to append (feedback for another attempt: failing tests, trimmed errors, a tool's
  answer), the reward of this attempt, `done`, and info.

Multi-turn: when a step is not `done` and returns messages, the runner appends them and
the policy replies again, up to `max_turns` (the trajectory keeps every turn; the tokens
of environment messages are excluded from the loss). The reward of an episode is that
of its last step. A step that raises is retried on the same environment, so an
environment must leave its state unchanged when it raises.

An environment class (`EnvClass`) is built with the run's `EnvSettings` and also names:
- `check_task(task)` (static or class method): raises ValueError naming the field when
  the task's `tests` are not what it can run, without running anything; `check_task`
  (below) calls it for every task a loader reads;
- `components`: the reward components it computes besides 'completion' (itops 'safety',
  ...), which reward terms may then weigh; () when it gives only its verdict.
`register_env` refuses a class that lacks any of them, naming what is missing, and
tests/integration/test_env_contract.py runs every registered domain through one contract.

Routing is data: `make_env(task.domain, ...)` looks the class up in `ENVS`; adding a
domain is adding an entry (`@register_env("name")`, or a plugin module), nothing else
changes. A domain named `ENV/NAME` runs in environment `ENV` (`env_name`): a task set
adds domains over an existing environment without code.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from rlvr.sandbox import Limits, execute
from rlvr.types import ExecutionResult, RewardBreakdown, Task

if TYPE_CHECKING:
    from rlvr.sandbox.client import SandboxClient

T = TypeVar("T")
C = TypeVar("C")


@dataclass(frozen=True)
class EnvSettings:
    system_prompt: str | None = None
    limits: Limits = field(default_factory=Limits)
    timeout_penalty: float = -0.5
    sandbox_url: str | None = None  # a remote `rlvr sandbox serve`; None = the local pool
    sandbox_token: str | None = None
    feedback_chars: int = 1500  # most characters of error output quoted back in feedback
    held_out_weight: float = 0.5  # the held-out tests' share of the completion reward (tests.held_out)
    hidden_credit: str = "all"  # drawn tests (metadata.hidden_tests): 'all' pays only a full pass, 'share' the share
    system_by_domain: dict[str, str] = field(default_factory=dict)
    # anything with run(code, tests, limits, language) -> ExecutionResult, used before the
    # url and the local pool: the Ray runner's sandbox workers (rlvr.dist.ray_runner.SandboxFleet)
    sandbox_runner: Any = None

    def execute(
        self, code: str, tests: dict[str, Any] | list[str], language: str = "python", limits: Limits | None = None
    ) -> ExecutionResult:
        """Run code against tests in the configured sandbox (sandbox workers, a remote
        server, or the local pool), under the run's limits or the given ones."""
        limits = limits or self.limits
        if self.sandbox_runner is not None:
            result: ExecutionResult = self.sandbox_runner.run(code, tests, limits, language)
            return result
        if self.sandbox_url:
            return _remote(self.sandbox_url, self.sandbox_token).run(code, tests, limits, language)
        return execute(code, tests, limits, language=language)


@functools.cache
def _remote(url: str, token: str | None) -> SandboxClient:
    from rlvr.sandbox.client import SandboxClient  # httpx: imported only for a remote sandbox

    return SandboxClient(url, token)


@dataclass
class StepResult:
    messages: list[dict[str, str]]  # to append to the conversation (feedback); empty when done
    reward: RewardBreakdown | None
    done: bool
    execution: ExecutionResult | None = None
    info: dict[str, Any] = field(default_factory=dict)


class Env(Protocol):
    """One episode of an environment."""

    async def reset(self, task: Task) -> list[dict[str, str]]: ...

    async def step(self, reply: str) -> StepResult: ...


class EnvClass(Protocol):
    """What `register_env` takes: a class building an `Env` from the run's settings, with
    its task check and the components it computes."""

    components: tuple[str, ...]

    def __call__(self, settings: EnvSettings) -> Env: ...

    def check_task(self, task: Task) -> None: ...


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run one environment coroutine to completion from synchronous code."""
    return asyncio.run(coro)


def opening_messages(task: Task, settings: EnvSettings) -> list[dict[str, str]]:
    """The system prompt (the task's own `metadata.system`, else the run's for the task's
    domain, else the run's default) and the task."""
    system = task.metadata.get("system", settings.system_by_domain.get(task.domain, settings.system_prompt))
    msgs = [{"role": "system", "content": str(system)}] if system else []
    msgs.append({"role": "user", "content": task.prompt})
    return msgs


ENVS: dict[str, EnvClass] = {}


def env_components() -> dict[str, list[str]]:
    """Reward components environments compute besides 'completion' (an environment class
    lists them in `components`), each with the domains that compute it; a reward term may
    name any of them."""
    out: dict[str, list[str]] = {}
    for domain, cls in sorted(ENVS.items()):
        for name in cls.components:
            out.setdefault(name, []).append(domain)
    return out


def register_env(domain: str) -> Callable[[C], C]:
    """Register an environment class for `domain` (a decorator). Refuses a domain taken,
    or a class without the coroutines `reset` and `step`, a `check_task` or a tuple of
    `components`, naming what is missing."""

    def deco(cls: C) -> C:
        if domain in ENVS:
            raise ValueError(f"domain '{domain}' already has an environment")
        missing = [m for m in ("reset", "step") if not inspect.iscoroutinefunction(getattr(cls, m, None))]
        missing += [] if callable(getattr(cls, "check_task", None)) else ["check_task"]
        comps = getattr(cls, "components", None)
        if not (isinstance(comps, tuple) and all(isinstance(c, str) and c.isidentifier() for c in comps)):
            missing.append("components (a tuple of component names; () when none)")
        if missing:
            raise ValueError(
                f"environment {getattr(cls, '__name__', cls)!r} for domain '{domain}' lacks: {', '.join(missing)}"
            )
        ENVS[domain] = cast(EnvClass, cls)
        return cls

    return deco


def check_reply(task: Task, reply: str, settings: EnvSettings | None = None) -> StepResult:
    """One fresh episode of the task's environment judging one reply (task generators
    use it to check that a reference reply scores full reward)."""
    env = make_env(task.domain, settings or EnvSettings())
    run_sync(env.reset(task))
    return run_sync(env.step(reply))


def env_name(domain: str) -> str:
    """The environment a domain runs in: the domain's own name when an environment is
    registered under it, else, for a domain `ENV/NAME` (`reasoning/gcd`), the environment
    `ENV`. Such a domain is a domain of its own everywhere else (the curriculum's mix,
    metrics by domain, the task check's quarantine rule) while sharing an environment:
    a task set adds domains over an existing environment without any code."""
    if domain in ENVS or "/" not in domain:
        return domain
    return domain.split("/", 1)[0]


def env_class(domain: str) -> EnvClass | None:
    """The environment class `domain` runs in (see `env_name`); None when there is none."""
    return ENVS.get(env_name(domain))


def reference_reply(task: Task) -> str | None:
    """The task's reference as the reply its environment checks: the environment class's
    own `reference_reply(task)` (an optional static or class method: a code environment
    fences the reference code, an answer environment writes the expected answer in the
    form its prompt asks for), else the task's `reference` as it stands (already a whole
    reply: `<answer>` tags, a bash block, tool calls, a diff). None when it has neither.
    The supervised stage trains on these (rlvr.sft); nothing is run here."""
    cls = env_class(task.domain)
    own = getattr(cls, "reference_reply", None) if cls is not None else None
    if callable(own):
        reply: str | None = own(task)
        return reply
    return task.reference or None


def check_task(task: Task) -> None:
    """Raise ValueError, naming the field, when no environment can run `task`: its domain
    has none, or the environment's own `check_task` (an optional static or class method
    of an environment class) refuses its `tests`. Nothing runs: loaders call it for every
    task, so a bad task file fails before a model is loaded."""
    cls = env_class(task.domain)
    if cls is None:
        raise ValueError(
            f"task {task.id}: field 'domain': no environment for domain '{task.domain}'; "
            f"registered: {', '.join(sorted(ENVS))} (a plugin module can register more)"
        )
    cls.check_task(task)


def make_env(domain: str, settings: EnvSettings) -> Env:
    cls = env_class(domain)
    if cls is None:
        raise KeyError(f"no environment for domain '{domain}'; registered: {', '.join(sorted(ENVS))}")
    env: Env = cls(settings)
    return env
