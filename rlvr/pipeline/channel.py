"""The channel: rollout batches from the producer to the learner, through a
`TrajectoryQueue` (rlvr.pipeline.redis_queue): `MemoryQueue` in one process
(`queue.backend: memory`), a Redis stream otherwise (`queue.backend: redis`). One class,
`QueueChannel`, serves both, so the drivers (rlvr.pipeline.drivers) and the Ray learner
(rlvr.dist.ray_runner) hand batches over, resume and acknowledge the same way; the
in-memory queue is not durable, so there a checkpoint carries the untrained batches
itself (`untrained`) and they go back into the queue when the run resumes.

The generator puts each step's batch into the queue as the entry `step/N` (N counted
from 1, as the logs count steps), together with the sampler's state as it stood right
after producing that batch; the learner takes the entries in order. Nothing of the
pending work lives only in the process:

- after checkpoint S is written, the entries the learner took so far are acknowledged
  (deleted); the checkpoint lists their ids (`trained`), so an entry given again after a
  crash between the checkpoint and its acknowledgement is recognised and skipped;
- on resume the learner first takes everything the queue still holds for it (`backlog`):
  the batches the dead process had generated but not trained on (taken or not), which it
  trains on first instead of generating them again; the sampler loads the state stored
  with the newest of them, so generation continues exactly after it (nothing sampled
  twice, nothing skipped); with no backlog it continues from the checkpoint's state;
- if the queue lost its newest entries (redis-server killed under fsync everysec, in the
  window rlvr.pipeline.redis_server describes), the sampler state of the newest surviving
  entry is consistent with it, and the lost steps are generated again.

The producer is this process (inline, or the thread driver); rlvr.dist's Ray runner
puts from rollout workers on other machines into the same stream, and the learner side
is this module's `QueueChannel` either way. With no `queue.url` the run starts its own
redis-server (rlvr.pipeline.redis_server) in <run directory>/queue; if that server dies
mid-run it is started again on the same port and files before the next queue operation.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from rlvr.config import ConfigError, RunConfig
from rlvr.pipeline.redis_queue import MemoryQueue, QueueError, RedisQueue, TrajectoryQueue
from rlvr.pipeline.redis_server import LocalRedis
from rlvr.types import RolloutBatch

T = TypeVar("T")
CONSUMER = "learner"  # one learner per run; a restarted one takes its own pending entries first


def stream_name(cfg: RunConfig) -> str:
    """The run's Redis stream: queue.stream, or one named after the run."""
    return cfg.queue.stream or f"rlvr:{cfg.name}"


def entry_id(step: int) -> str:
    """The queue id of the batch trained at (0-based) `step`: `step/<step + 1>`."""
    return f"step/{step + 1}"


def encode_batch(batch: RolloutBatch, sampler_state: dict[str, Any] | None) -> bytes:
    """The entry's payload; `sampler_state` is None from a Ray rollout worker (the
    learner samples the tasks there and records them itself)."""
    return json.dumps({"batch": batch.to_dict(), "sampler": sampler_state}).encode()


def decode_batch(payload: bytes) -> tuple[RolloutBatch, dict[str, Any] | None]:
    d = json.loads(payload)
    return RolloutBatch.from_dict(d["batch"]), d["sampler"]


class QueueChannel:
    """The learner's end of the queue (and the producer's `put`)."""

    def __init__(
        self,
        queue: TrajectoryQueue,
        server: LocalRedis | None = None,
        trained: Iterable[str] = (),
        *,
        durable: bool = True,
    ) -> None:
        self.queue, self.server, self.durable = queue, server, durable
        self.trained: set[str] = set(trained)  # ids of batches trained on (in every checkpoint)
        self.unacked: list[str] = []  # entry ids taken since the last checkpoint
        self.lock = threading.Lock()  # producer thread and learner share the server's restart
        self.restarts = 0
        self._backlog_ids: dict[int, str] = {}  # step -> entry id, for the backlog taken on resume
        self.early: dict[int, tuple[str, RolloutBatch]] = {}  # taken before their step: step -> (entry id, batch)

    def _call(self, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
        """One queue operation; the run's own redis-server is started again if it died."""
        for attempt in range(3):
            if self.server is not None and not self.server.alive():
                with self.lock:
                    if not self.server.alive():
                        print(f"queue: redis-server exited; starting it again on {self.server.url}", file=sys.stderr)
                        self.server.start()
                        self.restarts += 1
            try:
                return fn(*args, **kw)
            except getattr(self.queue, "connection_errors", ()):
                if self.server is None or attempt == 2:  # redis-py already retried with backoff
                    raise
        raise AssertionError("unreachable")

    def put(self, batch: RolloutBatch, sampler_state: dict[str, Any] | None) -> None:
        """Hand a batch over, with the sampler's state right after producing it (None from a
        Ray rollout worker) so that a resumed run continues exactly after it."""
        payload = encode_batch(batch, sampler_state if self.durable else None)
        self._call(self.queue.put, entry_id(batch.step), payload)

    def backlog(self) -> list[tuple[RolloutBatch, dict[str, Any] | None]]:
        """Everything the queue holds for this learner, in order, minus what it trained on
        (acknowledged now): taken and held, to be trained first."""
        out: list[tuple[str, RolloutBatch, dict[str, Any] | None]] = []
        done: list[str] = []
        while True:
            entries = self._call(self.queue.take, 256)
            if not entries:
                break
            for e in entries:
                if e.group_id in self.trained:
                    done.append(e.entry_id)
                else:
                    batch, state = decode_batch(e.payload)
                    out.append((e.entry_id, batch, state))
        out.sort(key=lambda x: x[1].step)
        unique: list[tuple[str, RolloutBatch, dict[str, Any] | None]] = []
        for item in out:  # a step put twice (a worker that died after its put, then again): the first
            if unique and unique[-1][1].step == item[1].step:
                done.append(item[0])
            else:
                unique.append(item)
        out = unique
        if done:
            self._call(self.queue.ack, done)
        self._backlog_ids = {b.step: eid for eid, b, _ in out}
        return [(b, s) for _, b, s in out]

    def hold_backlog(self, batches: list[RolloutBatch]) -> None:
        """Hold the backlog's batches by step (taken, not acknowledged), to be given by
        `take` when their step comes, marked as generated before the restart."""
        for b in batches:
            if self.durable:  # from the stream: generated by the process before this one
                b.stats["from_queue_backlog"] = 1.0
            self.early[b.step] = (self._backlog_ids[b.step], b)

    def holds(self, step: int) -> bool:
        """The step's batch is here already, waiting for its step."""
        return step in self.early

    def held_steps(self) -> list[int]:
        return sorted(self.early)

    def missing(self, step: int) -> bool:
        """The step's batch is neither trained nor held (its producer died before the put)."""
        return entry_id(step) not in self.trained and step not in self.early

    def taken(self, batch: RolloutBatch, eid: str) -> RolloutBatch:
        self.trained.add(entry_id(batch.step))
        self.unacked.append(eid)
        return batch

    def take(self, step: int, block_s: float) -> RolloutBatch | None:
        """The batch for `step`, or None if none came within block_s. Entries already
        trained on (given again after a crash, or put twice by a worker that died after
        its put) are acknowledged and passed over; entries for later steps (several
        workers finish out of order) are held, unacknowledged, until their step."""
        if step in self.early:
            eid, batch = self.early.pop(step)
            return self.taken(batch, eid)
        deadline = time.monotonic() + block_s
        while True:
            left = max(deadline - time.monotonic(), 0.0)
            entries = self._call(self.queue.take, 8, block_s=left)
            if not entries:
                return None
            for e in entries:
                if e.group_id in self.trained or _step_of(e.group_id) - 1 in self.early:
                    self._call(self.queue.ack, [e.entry_id])  # a copy of one trained or held
                    continue
                batch, _ = decode_batch(e.payload)
                if batch.step < step or e.group_id != entry_id(batch.step):
                    raise QueueError(
                        f"queue entry {e.group_id} arrived when the learner wanted {entry_id(step)}: the stream "
                        f"{getattr(self.queue, 'stream', '')} holds another run's batches (set queue.stream, or start "
                        "a new run)"
                    )
                self.early[batch.step] = (e.entry_id, batch)
            if step in self.early:
                eid, batch = self.early.pop(step)
                return self.taken(batch, eid)
            if time.monotonic() >= deadline:
                return None

    def acknowledge(self) -> None:
        """After a checkpoint: the batches it includes leave the queue for good."""
        ids, self.unacked = self.unacked, []
        if ids:
            self._call(self.queue.ack, ids)

    def untrained(self) -> list[RolloutBatch]:
        """What a checkpoint of a non-durable queue carries itself: every batch put and not
        yet trained, in step order (call with the producer paused). A durable queue keeps
        them: []."""
        if self.durable:
            return []
        for e in self._call(self.queue.take, 1 << 20):  # waiting entries join the held ones
            batch, _ = decode_batch(e.payload)
            self.early[batch.step] = (e.entry_id, batch)
        return [b for _, (_, b) in sorted(self.early.items())]

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint records of the queue (the ids trained on, for a durable one)."""
        if not self.durable:
            return {"backend": "memory"}
        stream = getattr(self.queue, "stream", "")
        return {"backend": "redis", "stream": stream, "trained": sorted(self.trained, key=_step_of)}

    def close(self) -> None:
        self.queue.close()
        if self.server is not None:
            self.server.close()


def _step_of(eid: str) -> int:
    tail = eid.rsplit("/", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def check_backlog(backlog: list[RolloutBatch], start: int) -> None:
    """A backlog continues where the learner resumes; anything else is another run's."""
    if backlog and backlog[0].step != start:
        raise QueueError(
            f"the queue's backlog continues with {entry_id(backlog[0].step)} where the learner resumes at "
            f"{entry_id(start)}: it holds batches of another run (set queue.stream, or start a new run)"
        )


def open_channel(cfg: RunConfig, run_dir: Path, trained: Iterable[str], resuming: bool) -> QueueChannel:
    """The run's channel: in memory (queue.backend memory), or a Redis stream (its own
    redis-server in <run>/queue without queue.url). A fresh run refuses a stream that
    already holds entries (another run's, under the same name)."""
    qc = cfg.queue
    if qc.backend == "memory":
        return QueueChannel(MemoryQueue(CONSUMER), trained=trained, durable=False)
    server = None
    url = qc.url
    if url is None:
        server = LocalRedis(run_dir / "queue", fsync=qc.fsync)
        url = server.start()
    stream = stream_name(cfg)
    try:
        queue = RedisQueue(url, stream=stream, group="learner", consumer=CONSUMER)
        if not resuming:
            depth = queue.depth()
            if depth.waiting or depth.pending:
                raise ConfigError(
                    f"queue stream {stream!r} at {url} already holds {depth.waiting + depth.pending} entries, and "
                    "this run starts afresh: another run's batches. Set queue.stream, or delete the stream"
                )
    except BaseException:
        if server is not None:
            server.close()
        raise
    return QueueChannel(queue, server, trained)
