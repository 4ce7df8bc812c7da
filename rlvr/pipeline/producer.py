"""Producing one training step's batch: sample tasks → generate → environments → rewards,
with DAPO's dynamic sampling and the failure policy.

`RolloutProducer.produce(step, version)` makes one step's batch. Rounds: sample prompts,
run the episodes, drop groups that failed (after retries) or, with on_failure='fail',
raise; with dynamic sampling, drop groups whose rewards are all equal and, in 'refill'
mode, sample more prompts until the batch is full or the rounds run out. Round 0 of step
s uses the seed `seed * 100003 + s`, so runs are reproducible. The drivers
(rlvr.pipeline.drivers) call it inline or from a thread; a Ray rollout worker calls it
with a ticket's tasks (rlvr.dist.ray_runner).
"""

from __future__ import annotations

from collections import Counter

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.algos.filtering import informative_groups
from rlvr.config import RunConfig
from rlvr.curriculum import Curriculum
from rlvr.pipeline.buffer import make_groups
from rlvr.pipeline.staleness import observe
from rlvr.rewards.canary import is_canary, maybe_canary
from rlvr.rewards.hidden_tests import for_step as drawn_for_step
from rlvr.rollout.engine import Engine, SamplingParams
from rlvr.rollout.factory import make_engine
from rlvr.rollout.runner import EpisodeSettings, PhaseReport, run_episodes
from rlvr.types import Group, RolloutBatch


class RolloutFailed(RuntimeError):
    """An episode failed after its retries and the policy is on_failure='fail'."""


class RolloutProducer:
    def __init__(
        self,
        cfg: RunConfig,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        episodes: EpisodeSettings,
        sampler: Curriculum,
    ) -> None:
        self.cfg, self.tokenizer, self.episodes, self.sampler = cfg, tokenizer, episodes, sampler
        self.model = model
        self.on_progress: PhaseReport | None = None  # (phase, done, total) for the progress display
        self.engine: Engine = make_engine(cfg, model, tokenizer)

    def use_own_weights(self, version: int) -> None:
        """Generate from a copy of the weights that only `engine.load_version` changes (async
        rollouts: the learner updates its model while the next batch is generated)."""
        if self.engine.shares_weights:
            self.engine = make_engine(self.cfg, self.model, self.tokenizer, own_weights=True, version=version)

    def publish(self, model: PreTrainedModel, version: int, *, copy_weights: bool) -> None:
        """Hand policy `version` to the engine (its tensors, unless it shares the model)."""
        weights = None
        if not self.engine.shares_weights:
            state = model.state_dict()
            weights = {k: v.detach().clone() for k, v in state.items()} if copy_weights else state
        self.engine.load_version(version, weights)

    def produce(self, step: int, version: int) -> RolloutBatch:
        cfg, ac = self.cfg, self.cfg.algo
        want = cfg.train.prompts_per_step
        kept: list[Group] = []
        dropped: list[Group] = []
        stats: Counter[str] = Counter()
        gen_s = 0.0  # seconds spent generating (all rounds)
        for rnd in range(1 + (ac.max_refill_rounds if ac.dynamic_sampling == "refill" else 0)):
            tasks = self.sampler.sample(want - len(kept) if rnd else want)
            if cfg.reward.hidden_tests:  # fresh tests from each reference, in place of the held-out ones
                tasks = [drawn_for_step(t, cfg.reward, seed=cfg.seed, step=step) for t in tasks]
            tasks = [
                maybe_canary(t, cfg.reward.canary_rate, f"{cfg.seed}/{step}/{rnd}/{i}") for i, t in enumerate(tasks)
            ]
            params = SamplingParams.sampling(cfg.generation, cfg.seed * 100003 + step + 7919 * rnd)
            trajs = run_episodes(
                tasks,
                engine=self.engine,
                tokenizer=self.tokenizer,
                episodes=self.episodes,
                params=params,
                policy_version=version,
                group_prefix=f"{step}/" if rnd == 0 else f"{step}.{rnd}/",
                on_progress=self.on_progress,
            )
            stats["retries"] += sum(int(t.timings.get("retries", 0)) for t in trajs)
            gen_s += max((t.timings.get("generate_s", 0.0) for t in trajs), default=0.0)
            groups = make_groups(trajs)
            stats["groups"] += len(groups)
            observe(self.sampler, groups)
            for g in groups:
                if is_canary(g.trajs[0].task_id):  # a test of the policy, never a lesson
                    stats["canary_groups"] += 1
                    dropped.append(g)
                elif any(t.status != "ok" for t in g.trajs):
                    if cfg.rollout.on_failure == "fail":
                        err = next(t.error for t in g.trajs if t.status != "ok")
                        raise RolloutFailed(f"step {step}, group {g.group_id}: {err}")
                    stats["dropped_failed"] += 1
                    dropped.append(g)
                elif ac.dynamic_sampling != "none" and not _informative(g):
                    stats["dropped_uninformative"] += 1
                    dropped.append(g)
                else:
                    kept.append(g)
            stats["rounds"] = rnd + 1
            if ac.dynamic_sampling != "refill" or len(kept) >= want:
                break
        return RolloutBatch(
            step,
            version,
            kept[:want],
            dropped,
            {**{k: float(v) for k, v in stats.items()}, "generate_s": gen_s},
            self.sampler.metrics(),
        )


def _informative(g: Group) -> bool:
    rewards = torch.tensor([[t.reward.total if t.reward else 0.0 for t in g.trajs]])
    return bool(informative_groups(rewards)[0])
