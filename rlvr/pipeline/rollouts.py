"""Producing each training step's batch: sample tasks → generate → environments → rewards,
with DAPO's dynamic sampling and the failure policy; synchronously, or ahead of the
learner in a background thread.

`RolloutProducer.produce(step)` makes one step's batch. Rounds: sample prompts, run the
episodes, drop groups that failed (after retries) or, with on_failure='fail', raise;
with dynamic sampling, drop groups whose rewards are all equal and, in 'refill' mode,
sample more prompts until the batch is full or the rounds run out. Round 0 of step s
uses the seed `seed * 100003 + s`, so runs are reproducible.

`SyncRollouts` calls it when the learner asks. `AsyncRollouts` runs it in a thread on
its own copy of the weights: the batch for step s may be generated once the learner
has reached version (s - start) + v0 - max_staleness, and the newest published weights
are loaded before each batch. So a batch is never more than `max_staleness` versions
old when trained on; with max_staleness = 0 the thread waits for every update and the
run equals the sync one. `pause()` holds the producer between batches, so a checkpoint
sees a consistent state: the sampler position and every finished-but-untrained batch
(`state_dict()`), which a resumed run trains on first — nothing lost, nothing twice.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from rlvr.algos.filtering import informative_groups
from rlvr.config import RunConfig
from rlvr.curriculum import Curriculum, Outcome
from rlvr.envs import EnvSettings
from rlvr.pipeline.buffer import make_groups
from rlvr.rewards.canary import is_canary, maybe_canary
from rlvr.rewards.scorer import Scorer
from rlvr.rollout.engine import Engine, SamplingParams
from rlvr.rollout.factory import make_engine
from rlvr.rollout.runner import PhaseReport, run_episodes
from rlvr.trace.store import solved
from rlvr.types import Group, RolloutBatch


class RolloutFailed(RuntimeError):
    """An episode failed after its retries and the policy is on_failure='fail'."""


class Rollouts(Protocol):
    """Where the loop's batches come from, and where its new weights go."""

    def next(self, step: int, version: int) -> RolloutBatch: ...
    def publish(self, model: PreTrainedModel, version: int) -> None: ...
    def pause(self) -> AbstractContextManager[None]: ...
    def state_dict(self) -> dict[str, Any]: ...
    def queue_state(self) -> dict[str, Any]: ...
    def after_checkpoint(self) -> None: ...
    def close(self) -> None: ...


class RolloutProducer:
    def __init__(
        self,
        cfg: RunConfig,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        settings: EnvSettings,
        scorer: Scorer,
        sampler: Curriculum,
    ) -> None:
        self.cfg, self.tokenizer, self.settings, self.scorer, self.sampler = cfg, tokenizer, settings, scorer, sampler
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
            tasks = [
                maybe_canary(t, cfg.reward.canary_rate, f"{cfg.seed}/{step}/{rnd}/{i}") for i, t in enumerate(tasks)
            ]
            params = SamplingParams(
                max_new_tokens=cfg.generation.max_new_tokens,
                temperature=cfg.generation.temperature,
                top_p=cfg.generation.top_p,
                stop=tuple(cfg.generation.stop),
                seed=cfg.seed * 100003 + step + 7919 * rnd,
            )
            trajs = run_episodes(
                tasks,
                engine=self.engine,
                tokenizer=self.tokenizer,
                settings=self.settings,
                params=params,
                group_size=ac.group_size,
                response_prefix=cfg.prompt.response_prefix,
                policy_version=version,
                workers=cfg.sandbox.workers,
                group_prefix=f"{step}/" if rnd == 0 else f"{step}.{rnd}/",
                scorer=self.scorer,
                max_retries=cfg.rollout.max_retries,
                max_turns=cfg.rollout.max_turns,
                max_context_tokens=cfg.rollout.max_context_tokens,
                on_progress=self.on_progress,
            )
            stats["retries"] += sum(int(t.timings.get("retries", 0)) for t in trajs)
            gen_s += max((t.timings.get("generate_s", 0.0) for t in trajs), default=0.0)
            groups = make_groups(trajs)
            stats["groups"] += len(groups)
            self.sampler.observe([_outcome(g) for g in groups if all(t.status == "ok" for t in g.trajs)])
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


def _outcome(g: Group) -> Outcome:
    return Outcome(
        g.trajs[0].task_id, [t.reward.total if t.reward else 0.0 for t in g.trajs], [solved(t) for t in g.trajs]
    )


def _informative(g: Group) -> bool:
    rewards = torch.tensor([[t.reward.total if t.reward else 0.0 for t in g.trajs]])
    return bool(informative_groups(rewards)[0])


class SyncRollouts:
    """Generates each batch when asked, with the learner's own model."""

    def __init__(self, producer: RolloutProducer, pending: list[RolloutBatch] | None = None) -> None:
        self.producer = producer
        self.pending = deque(pending or [])

    def next(self, step: int, version: int) -> RolloutBatch:
        if self.pending:
            return self.pending.popleft()
        return self.producer.produce(step, version)

    def publish(self, model: PreTrainedModel, version: int) -> None:
        # generation and updates never overlap here: the engine may read the tensors as they are
        self.producer.publish(model, version, copy_weights=False)

    @contextmanager
    def pause(self) -> Iterator[None]:
        yield

    def state_dict(self) -> dict[str, Any]:
        return {"pending": [b.to_dict() for b in self.pending]}

    def queue_state(self) -> dict[str, Any]:
        """What a checkpoint records of the hand-over (rlvr.pipeline.queued: the trained ids)."""
        return {"backend": "memory"}

    def after_checkpoint(self) -> None:
        """Called once a checkpoint is written (the durable queue acknowledges then)."""

    def close(self) -> None:
        pass


class AsyncRollouts:
    """Generates batches ahead in a background thread, at most max_staleness versions old."""

    def __init__(
        self,
        producer: RolloutProducer,
        policy: PreTrainedModel | None,
        *,
        start_step: int,
        end_step: int,
        version: int,
        max_staleness: int,
        pending: list[RolloutBatch] | None = None,
        first_step: int | None = None,
    ) -> None:
        self.producer = producer
        self.max_staleness = max_staleness
        # learner steps finished (absolute): step s may be generated once s - max_staleness are.
        # Counted in steps, not policy versions: a step the learner skips (nothing usable in
        # its batch) publishes the same version again, and the generator must go on.
        self.steps_done = start_step
        self.queue: deque[RolloutBatch] = deque(pending or [])
        self.cond = threading.Condition()
        self.produce_lock = threading.Lock()
        self.learner_version = version
        # published by the learner, not yet handed to the engine: (version, its weights or None)
        self.pending_version: tuple[int, dict[str, torch.Tensor] | None] | None = None
        self.error: BaseException | None = None
        self.stopping = False
        # The generator's own copy of the weights, so that updates never tear a batch. With
        # max_staleness 0 generation and updates never overlap (each waits for the other),
        # so a shared model is used as is and the run is bit-for-bit the sync one.
        del policy
        if max_staleness > 0:
            producer.use_own_weights(version)
        first = first_step if first_step is not None else self.queue[-1].step + 1 if self.queue else start_step
        self.thread = threading.Thread(target=self._run, args=(first, end_step), name="rlvr-rollouts", daemon=True)
        self.thread.start()

    def _run(self, first: int, end: int) -> None:
        try:
            for step in range(first, end):
                with self.cond:
                    # step s may start once the learner finished step s - max_staleness
                    self.cond.wait_for(self._may_start(step - self.max_staleness))
                    if self.stopping:
                        return
                    published, self.pending_version = self.pending_version, None
                    version = self.learner_version
                with self.produce_lock:
                    if published is not None:
                        self.producer.engine.load_version(published[0], published[1])
                    batch = self.producer.produce(step, version)
                    self._deliver(batch)
        except BaseException as e:  # surfaced to the training loop by next()
            with self.cond:
                self.error = e
                self.cond.notify_all()

    def _may_start(self, need: int) -> Callable[[], bool]:
        return lambda: self.stopping or self.steps_done >= need

    def _deliver(self, batch: RolloutBatch) -> None:
        """Hand a finished batch to the learner's side (here: the in-process deque; called
        in the generator thread, holding produce_lock)."""
        with self.cond:
            self.queue.append(batch)
            self.cond.notify_all()

    def _receive(self, step: int) -> RolloutBatch:
        with self.cond:
            self.cond.wait_for(lambda: bool(self.queue) or self.error is not None)
            if self.error is not None and not self.queue:
                raise self.error
            return self.queue.popleft()

    def next(self, step: int, version: int) -> RolloutBatch:
        batch = self._receive(step)
        if batch.step != step:
            raise RuntimeError(f"rollout batch for step {batch.step} arrived at step {step}")
        if version - batch.version > self.max_staleness:  # cannot happen by construction; kept as a guard
            batch.stats["stale_dropped"] = float(len(batch.groups))
            batch.dropped += batch.groups
            batch.groups = []
        return batch

    def publish(self, model: PreTrainedModel, version: int) -> None:
        """New weights for the generator: a snapshot (later updates cannot tear it), handed
        to its engine by the generator thread before its next batch."""
        engine = self.producer.engine
        weights = None if engine.shares_weights else {k: v.detach().clone() for k, v in model.state_dict().items()}
        with self.cond:
            self.pending_version = (version, weights)
            self.learner_version = version
            self.steps_done += 1  # publish is called once per training step, skipped or not
            self.cond.notify_all()

    @contextmanager
    def pause(self) -> Iterator[None]:
        """Hold the generator between batches (for a consistent checkpoint)."""
        with self.produce_lock:
            yield

    def state_dict(self) -> dict[str, Any]:
        with self.cond:
            return {"pending": [b.to_dict() for b in self.queue]}

    def queue_state(self) -> dict[str, Any]:
        return {"backend": "memory"}

    def after_checkpoint(self) -> None:
        pass

    def close(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.thread.join(timeout=600)
