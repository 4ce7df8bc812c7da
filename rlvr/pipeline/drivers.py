"""The drivers: what runs the producer, and how its batches reach the learner. Both hand
every batch through a channel (rlvr.pipeline.channel: in memory, or a Redis stream), so
backlog, resume and acknowledgement are the channel's, written once; the staleness rules
are rlvr.pipeline.staleness's. The Ray learner (rlvr.dist.ray_runner.RayRollouts) is the
third driver: it issues tickets to rollout workers and takes from the same channel.

`InlineDriver` produces each batch when the learner asks, with the learner's own model.
`ThreadDriver` produces ahead in a background thread on its own copy of the weights: the
batch for step s may be generated once the learner has finished step s - max_staleness,
and the newest published weights are loaded before each batch, so a batch is never more
than `max_staleness` versions old when trained on; with max_staleness 0 the thread waits
for every update and the run equals the inline one, bit for bit. `pause()` holds the
producer between batches, so a checkpoint sees a consistent state: the sampler position
and every finished-but-untrained batch, which a resumed run trains on first — nothing
lost, nothing twice.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

import torch
from transformers import PreTrainedModel

from rlvr.pipeline.channel import QueueChannel, entry_id
from rlvr.pipeline.producer import RolloutProducer
from rlvr.pipeline.redis_queue import QueueError
from rlvr.pipeline.staleness import StalenessGate, drop_stale
from rlvr.types import RolloutBatch

TAKE_BACK_S = 30.0  # an inline batch put and not given back within this long is an error
POLL_S = 0.5  # how often the learner waiting on the thread looks at its health


class Rollouts(Protocol):
    """Where the loop's batches come from, and where its new weights go."""

    def next(self, step: int, version: int) -> RolloutBatch: ...
    def publish(self, model: PreTrainedModel, version: int) -> None: ...
    def pause(self) -> AbstractContextManager[None]: ...
    def state_dict(self) -> dict[str, Any]: ...
    def queue_state(self) -> dict[str, Any]: ...
    def after_checkpoint(self) -> None: ...
    def close(self) -> None: ...


class _Driver:
    """What both drivers do alike: checkpoint state, acknowledgement, closing."""

    channel: QueueChannel

    def state_dict(self) -> dict[str, Any]:
        """The batches a checkpoint must carry itself (a non-durable channel's); called
        inside `pause()`, so the producer is between batches."""
        return {"pending": [b.to_dict() for b in self.channel.untrained()]}

    def pause(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def queue_state(self) -> dict[str, Any]:
        return self.channel.state_dict()

    def after_checkpoint(self) -> None:
        """Called once a checkpoint is written: what it includes leaves the channel."""
        self.channel.acknowledge()


class InlineDriver(_Driver):
    """Produces each batch when the learner asks for it (a backlog first)."""

    def __init__(self, producer: RolloutProducer, channel: QueueChannel) -> None:
        self.producer, self.channel = producer, channel

    def next(self, step: int, version: int) -> RolloutBatch:
        if self.channel.holds(step):  # generated before a restart
            held = self.channel.take(step, block_s=0.0)
            assert held is not None
            return held
        batch = self.producer.produce(step, version)
        self.channel.put(batch, self.producer.sampler.state_dict())
        got = self.channel.take(step, block_s=TAKE_BACK_S)
        if got is None:
            raise QueueError(f"{entry_id(step)} was put into the queue but could not be taken back within 30 s")
        return got

    def publish(self, model: PreTrainedModel, version: int) -> None:
        # generation and updates never overlap here: the engine may read the tensors as they are
        self.producer.publish(model, version, copy_weights=False)

    @contextmanager
    def pause(self) -> Iterator[None]:
        yield

    def close(self) -> None:
        self.channel.close()


class ThreadDriver(_Driver):
    """Produces batches ahead in a background thread, at most max_staleness versions old."""

    def __init__(
        self,
        producer: RolloutProducer,
        channel: QueueChannel,
        *,
        first_step: int,
        end_step: int,
        steps_done: int,
        version: int,
        max_staleness: int,
    ) -> None:
        self.producer, self.channel = producer, channel
        self.max_staleness = max_staleness
        self.gate = StalenessGate(max_staleness, steps_done)
        self.cond = threading.Condition()
        self.produce_lock = threading.Lock()
        self.learner_version = version
        # published by the learner, not yet handed to the engine: (version, its weights or None)
        self.pending_version: tuple[int, dict[str, torch.Tensor] | None] | None = None
        self.error: BaseException | None = None
        self.stopping = False
        # The generator's own copy of the weights, so that updates never tear a batch. With
        # max_staleness 0 generation and updates never overlap (each waits for the other),
        # so a shared model is used as is and the run is bit-for-bit the inline one.
        if max_staleness > 0:
            producer.use_own_weights(version)
        self.thread = threading.Thread(target=self._run, args=(first_step, end_step), name="rlvr-rollouts", daemon=True)
        self.thread.start()

    def _run(self, first: int, end: int) -> None:
        try:
            for step in range(first, end):
                with self.cond:
                    self.cond.wait_for(functools.partial(self._ready, step))
                    if self.stopping:
                        return
                    published, self.pending_version = self.pending_version, None
                    version = self.learner_version
                with self.produce_lock:
                    if published is not None:
                        self.producer.engine.load_version(published[0], published[1])
                    batch = self.producer.produce(step, version)
                    self.channel.put(batch, self.producer.sampler.state_dict())
        except BaseException as e:  # surfaced to the training loop by next()
            with self.cond:
                self.error = e
                self.cond.notify_all()

    def _ready(self, step: int) -> bool:
        return self.stopping or self.gate.may_start(step)

    def next(self, step: int, version: int) -> RolloutBatch:
        while True:
            batch = self.channel.take(step, block_s=POLL_S)
            if batch is not None:
                break
            with self.cond:
                if self.error is not None:
                    raise self.error
                if not self.thread.is_alive():
                    raise QueueError(f"the generator stopped without putting {entry_id(step)} into the queue")
        if batch.step != step:
            raise RuntimeError(f"rollout batch for step {batch.step} arrived at step {step}")
        return drop_stale(batch, version, self.max_staleness)  # cannot drop by construction; kept as a guard

    def publish(self, model: PreTrainedModel, version: int) -> None:
        """New weights for the generator: a snapshot (later updates cannot tear it), handed
        to its engine by the generator thread before its next batch."""
        engine = self.producer.engine
        weights = None if engine.shares_weights else {k: v.detach().clone() for k, v in model.state_dict().items()}
        with self.cond:
            self.pending_version = (version, weights)
            self.learner_version = version
            self.gate.step_finished()  # publish is called once per training step, skipped or not
            self.cond.notify_all()

    @contextmanager
    def pause(self) -> Iterator[None]:
        """Hold the generator between batches (for a consistent checkpoint)."""
        with self.produce_lock:
            yield

    def close(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        self.thread.join(timeout=600)
        self.channel.close()


def make_driver(
    cfg: Any, producer: RolloutProducer, channel: QueueChannel, *, start: int, version: int
) -> InlineDriver | ThreadDriver:
    """The driver `rollout.mode` names (sync: inline; async: a thread), over `channel`
    whose backlog (if any) is held already; the thread starts after the held steps."""
    if cfg.rollout.mode != "async":
        return InlineDriver(producer, channel)
    held = channel.held_steps()
    return ThreadDriver(
        producer,
        channel,
        first_step=held[-1] + 1 if held else start,
        end_step=cfg.train.steps,
        steps_done=start,
        version=version,
        max_staleness=cfg.rollout.max_staleness,
    )
