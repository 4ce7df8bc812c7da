"""pass@1 on held-out tasks: greedy decoding, one sample per task, all tests must pass.

The model stack (torch, transformers, the engines) is imported only when a model is
evaluated."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rlvr.config import RunConfig
from rlvr.types import Task, Trajectory

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


@dataclass
class EvalResult:
    pass_at_1: float
    mean_reward: float
    num_tasks: int
    by_difficulty: dict[int, float] = field(default_factory=dict)
    trajectories: list[Trajectory] = field(default_factory=list)
    by_domain: dict[str, float] = field(default_factory=dict)  # pass@1 per domain

    def to_dict(self) -> dict[str, Any]:
        """The figures as plain data (JSON: checkpoints, summaries, the trace store), without the trajectories."""
        return {
            "pass_at_1": self.pass_at_1,
            "mean_reward": self.mean_reward,
            "num_tasks": self.num_tasks,
            "by_difficulty": {str(k): v for k, v in self.by_difficulty.items()},
            "by_domain": self.by_domain,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> EvalResult:
        by_difficulty = {int(k): v for k, v in d["by_difficulty"].items()}
        return cls(d["pass_at_1"], d["mean_reward"], d["num_tasks"], by_difficulty, by_domain=d.get("by_domain", {}))


def evaluate(
    model: PreTrainedModel | None, tokenizer: PreTrainedTokenizerBase, tasks: list[Task], cfg: RunConfig
) -> EvalResult:
    """pass@1 of the policy on `tasks` (model None: the engine serves its own, engine.kind openai)."""
    from rlvr.rollout.engine import SamplingParams
    from rlvr.rollout.factory import make_engine
    from rlvr.rollout.runner import episode_settings, run_episodes
    from rlvr.trace.store import solved

    if not tasks:
        raise ValueError("no tasks to evaluate")
    engine = make_engine(cfg, model, tokenizer, for_training=False)
    params = SamplingParams(
        max_new_tokens=cfg.eval.max_new_tokens or cfg.generation.max_new_tokens,
        stop=tuple(cfg.generation.stop),
        greedy=True,
    )
    trajs = run_episodes(tasks, engine=engine, tokenizer=tokenizer, episodes=episode_settings(cfg), params=params)
    passed = [solved(t) for t in trajs]
    rewards = [t.reward.total if t.reward else 0.0 for t in trajs]
    by_diff: dict[int, list[bool]] = {}
    by_dom: dict[str, list[bool]] = {}
    for task, ok in zip(tasks, passed, strict=True):
        by_diff.setdefault(task.difficulty, []).append(ok)
        by_dom.setdefault(task.domain, []).append(ok)
    return EvalResult(
        pass_at_1=sum(passed) / len(passed),
        mean_reward=sum(rewards) / len(rewards),
        num_tasks=len(tasks),
        by_difficulty={d: sum(v) / len(v) for d, v in sorted(by_diff.items())},
        trajectories=trajs,
        by_domain={d: sum(v) / len(v) for d, v in by_dom.items()},
    )
