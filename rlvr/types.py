"""The records that travel through rlvr, from task to trace.

Every stage reads and extends the same `Trajectory`: the rollout fills in turns, token
ids and behaviour log-probs; the environment adds execution results; rewards add the
breakdown; the learner reads it; the trace store appends it. All records are plain
dataclasses that round-trip through `to_dict` / `from_dict` (and so through JSON)
without loss, so a trace written today can be replayed by a later version.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from typing import Any, Literal, TypeVar

Role = Literal["system", "user", "assistant", "tool"]

T = TypeVar("T")


class RunStatus(StrEnum):
    """How one execution of untrusted code ended, as decided by the supervisor."""

    OK = "OK"
    COMPILE_ERROR = "COMPILE_ERROR"
    RUNTIME_ERROR = "RUNTIME_ERROR"
    TIMEOUT = "TIMEOUT"
    MEMORY = "MEMORY"
    OUTPUT_LIMIT = "OUTPUT_LIMIT"
    SANDBOX_ERROR = "SANDBOX_ERROR"


class TestStatus(StrEnum):
    """The verdict for one test; only PASSED counts towards the reward."""

    __test__ = False  # not a pytest test class

    PASSED = "PASSED"
    FAILED = "FAILED"
    ERROR = "ERROR"
    TIMEOUT = "TIMEOUT"


def _check_keys(cls: type, data: dict[str, Any]) -> None:
    if not isinstance(data, dict):
        raise TypeError(f"{cls.__name__}.from_dict expects a dict, got {type(data).__name__}")
    allowed = {f.name for f in fields(cls)}
    unknown = set(data) - allowed
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")


@dataclass
class Task:
    """One problem to solve.

    `tests` is domain-specific plain data; for the `python` code domain it is
    `{"format": "assert", "tests": ["assert f(1) == 2", ...]}` and `entry_point` names
    the function the model must define. `difficulty` is an integer level, 1 = easiest.
    """

    id: str
    domain: str
    prompt: str
    tests: dict[str, Any] = field(default_factory=dict)
    entry_point: str | None = None
    difficulty: int = 1
    reference: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        _check_keys(cls, data)
        for key in ("id", "domain", "prompt"):
            if not isinstance(data.get(key), str) or not data[key]:
                raise ValueError(f"Task: field '{key}' must be a non-empty string")
        if not isinstance(data.get("difficulty", 1), int):
            raise ValueError("Task: field 'difficulty' must be an integer")
        return cls(**data)


@dataclass
class Turn:
    """One message of an episode. `trainable` is True only for the policy's own tokens."""

    role: Role
    content: str
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)  # [len(token_ids)] behaviour log-probs
    trainable: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Turn:
        _check_keys(cls, data)
        return cls(**data)


HELD_OUT = "held_out/"
"""The name prefix of a held-out test's verdict (rlvr.sandbox.spec names them so)."""
CANARY = "#canary/"
"""What a canary task's id carries after its real task's id (rlvr.rewards.canary)."""


@dataclass(frozen=True)
class Tally:
    """Tests passed out of tests run."""

    passed: int
    total: int

    @property
    def share(self) -> float:
        return self.passed / self.total if self.total else 0.0


@dataclass
class TestResult:
    """The supervisor's verdict on one test, with what was observed."""

    __test__ = False  # not a pytest test class

    name: str
    status: TestStatus
    message: str = ""
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status.value,
            "message": self.message,
            "duration_s": self.duration_s,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TestResult:
        _check_keys(cls, data)
        return cls(**{**data, "status": TestStatus(data["status"])})


@dataclass
class ExecutionResult:
    """What the sandbox reports for one submission: the run status, per-test verdicts,
    captured (and capped) output, and resource use."""

    status: RunStatus
    tests: list[TestResult] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    wall_time_s: float = 0.0
    cpu_time_s: float = 0.0
    peak_memory_mb: float = 0.0
    error: str = ""
    violations: list[str] = field(default_factory=list)  # harness protocol broken: forged results (verdict.py)

    @property
    def passed(self) -> int:
        return sum(t.status is TestStatus.PASSED for t in self.tests)

    @property
    def total(self) -> int:
        return len(self.tests)

    def partition(self) -> tuple[Tally, Tally]:
        """Tests passed and run, visible and held-out (`held_out/<i>`) apart."""
        held = [t for t in self.tests if t.name.startswith(HELD_OUT)]
        held_pass = sum(t.status is TestStatus.PASSED for t in held)
        return Tally(self.passed - held_pass, self.total - len(held)), Tally(held_pass, len(held))

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "passed": self.passed,
            "total": self.total,
            "tests": [t.to_dict() for t in self.tests],
            "stdout": self.stdout,
            "stderr": self.stderr,
            "wall_time_s": self.wall_time_s,
            "cpu_time_s": self.cpu_time_s,
            "peak_memory_mb": self.peak_memory_mb,
            "error": self.error,
            **({"violations": list(self.violations)} if self.violations else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExecutionResult:
        data = {k: v for k, v in data.items() if k not in ("passed", "total")}
        _check_keys(cls, data)
        return cls(
            **{
                **data,
                "status": RunStatus(data["status"]),
                "tests": [TestResult.from_dict(t) for t in data.get("tests", [])],
            }
        )


@dataclass
class RewardBreakdown:
    """The scalar reward, every component it was made of, and any hack flags (all logged)."""

    total: float
    components: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)  # hack signatures detected (rlvr.rewards.hacks)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RewardBreakdown:
        _check_keys(cls, data)
        return cls(**data)


@dataclass
class Trajectory:
    """One episode of one task by one policy version.

    `prompt_ids` is the tokenised prompt the policy saw; `completion_ids` are the sampled
    tokens ([L]); `logprobs` their behaviour log-probs under the sampling policy ([L]);
    `loss_mask` is 1 for tokens that are trained on ([L]). `group_id` ties together the G
    samples of one prompt for group-relative advantages.
    """

    task_id: str
    domain: str
    group_id: str
    turns: list[Turn] = field(default_factory=list)
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    finish_reason: str = ""  # "eos" | "stop" | "length"
    execution: ExecutionResult | None = None
    reward: RewardBreakdown | None = None
    advantage: float | None = None
    policy_version: int = 0
    timings: dict[str, float] = field(default_factory=dict)
    status: str = "ok"  # "ok" | "error"; an error trajectory is never trained on
    error: str = ""  # why the episode failed (status "error"): the exception or sandbox failure

    @property
    def completion_text(self) -> str:
        return next((t.content for t in reversed(self.turns) if t.role == "assistant"), "")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["turns"] = [t.to_dict() for t in self.turns]
        out["execution"] = self.execution.to_dict() if self.execution else None
        out["reward"] = self.reward.to_dict() if self.reward else None
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        _check_keys(cls, data)
        return cls(
            **{
                **data,
                "turns": [Turn.from_dict(t) for t in data.get("turns", [])],
                "execution": ExecutionResult.from_dict(data["execution"]) if data.get("execution") else None,
                "reward": RewardBreakdown.from_dict(data["reward"]) if data.get("reward") else None,
            }
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Trajectory:
        return cls.from_dict(json.loads(text))


@dataclass
class Group:
    """The G trajectories of one prompt (same `group_id`), tagged with its domain and the
    policy version that generated it; `uses` counts how often the learner trained on it."""

    group_id: str
    domain: str
    version: int
    trajs: list[Trajectory]
    uses: int = 0

    @property
    def priority(self) -> float:
        rewards = [t.reward.total if t.reward else 0.0 for t in self.trajs]
        return (max(rewards) - min(rewards) if rewards else 0.0) + 0.01

    def to_dict(self) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "domain": self.domain,
            "version": self.version,
            "uses": self.uses,
            "trajs": [t.to_dict() for t in self.trajs],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Group:
        return cls(
            d["group_id"], d["domain"], int(d["version"]), [Trajectory.from_dict(t) for t in d["trajs"]], int(d["uses"])
        )


@dataclass
class RolloutBatch:
    """One training step's groups as the pipeline hands them to the learner, with the groups
    it dropped (failed, uninformative, canaries, stale: kept for the trace), the producer's
    counters and the sampler's figures. Serialised whole into the queue and checkpoints."""

    step: int
    version: int
    groups: list[Group]
    dropped: list[Group] = field(default_factory=list)  # failed or uninformative, kept for the trace
    stats: dict[str, float] = field(default_factory=dict)
    curriculum: dict[str, float] = field(default_factory=dict)  # the sampler's figures for this step

    @property
    def trajs(self) -> list[Trajectory]:
        return [t for g in self.groups for t in g.trajs]

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "version": self.version,
            "groups": [g.to_dict() for g in self.groups],
            "dropped": [g.to_dict() for g in self.dropped],
            "stats": self.stats,
            "curriculum": self.curriculum,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RolloutBatch:
        return cls(
            int(d["step"]),
            int(d["version"]),
            [Group.from_dict(g) for g in d["groups"]],
            [Group.from_dict(g) for g in d["dropped"]],
            dict(d["stats"]),
            dict(d.get("curriculum", {})),
        )
