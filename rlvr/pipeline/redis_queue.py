"""The trajectory queue between rollout workers and the learner (rlvr.pipeline.channel uses it).

An entry is one scored group under its id (`group_id`) with an opaque payload (the
group's encoding is the caller's). Delivery is at least once, never fewer:

- `put` appends an entry; it is durable once `put` returns (Redis: the append-only file
  has it before the reply, except for up to 2 s of writes a slow disk can hold back
  under fsync everysec: rlvr.pipeline.redis_server).
- `take` hands out entries for this consumer; each stays *pending* (delivered, not yet
  acknowledged) until `ack`. A consumer that restarts under the same name is first given
  its own pending entries again, oldest first, then new ones.
- `ack` is called only once the learner's checkpoint that includes the entries' update
  is written; it removes them for good. An entry taken but not acknowledged when the
  learner dies is therefore taken again by the restarted learner; the ids of the groups
  it trained on are in its checkpoint, so it skips the ones it already trained on
  (`seen`) and nothing is trained twice.
- `reclaim` moves to this consumer the pending entries of consumers idle for at least
  `idle_s` (a learner that died and came back under another name, a hung one).

Two backends share this contract (tests/integration/test_trajectory_queue.py runs it on
both): `MemoryQueue`, in-process and not durable (the single-process run, tests), and
`RedisQueue`, a Redis stream with one consumer group (XADD / XREADGROUP / XACK + XDEL /
XAUTOCLAIM), durable across the death of any process including redis-server itself when
it runs with an append-only file (rlvr.pipeline.redis_server starts it so).

A producer whose `put` fails on a dropped connection retries (`retries`, with backoff),
so a restart of redis-server costs time, not entries. Each `put` carries a token made
once before its retries: a retried append whose first try did reach the server leaves
the entry twice in the stream, and the consumer drops the second by its token (a group
put again on purpose has a new token and is delivered; the learner's trained-id set
decides whether to train on it).

Limit: when the reply to a `take` is lost with the connection after the server handed
the entries out, they stay pending on this consumer and are given again only when it
restarts under its name, or when another consumer reclaims them.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class Entry:
    entry_id: str  # the queue's own id, for ack
    group_id: str
    payload: bytes
    redelivered: bool = False  # given out before (to this consumer before a restart, or reclaimed)


@dataclass(frozen=True)
class Depth:
    waiting: int  # put, not yet taken
    pending: int  # taken, not yet acknowledged


class QueueError(RuntimeError):
    """The queue could not do what was asked; the message says why and what to check."""


class TrajectoryQueue(Protocol):
    def put(self, group_id: str, payload: bytes) -> str: ...
    def take(self, n: int, block_s: float = 0.0) -> list[Entry]: ...
    def ack(self, entry_ids: Iterable[str]) -> None: ...
    def reclaim(self, idle_s: float, n: int = 100) -> list[Entry]: ...
    def depth(self) -> Depth: ...
    def close(self) -> None: ...


class _Shared:
    """The tables behind every consumer of one MemoryQueue."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.next = 0
        self.waiting: OrderedDict[str, tuple[str, bytes]] = OrderedDict()
        self.pending: dict[str, tuple[str, bytes, str, float]] = {}  # id -> (group, payload, consumer, since)


class MemoryQueue:
    """In-process and thread-safe; gone with the process. Consumers of one queue are made
    by `consumer(name)`, as several learners read one Redis stream; a second object under
    the same name plays that consumer restarted."""

    def __init__(self, name: str = "learner-0", shared: _Shared | None = None) -> None:
        self._s = shared or _Shared()
        self.name = name
        self._own_first = True
        self._cursor = 0  # own pending entries given again so far (by id) after a restart
        self._held: set[str] = set()  # handed out by this object, not yet acknowledged

    def consumer(self, name: str) -> MemoryQueue:
        return MemoryQueue(name, self._s)

    def put(self, group_id: str, payload: bytes) -> str:
        s = self._s
        with s.lock:
            s.next += 1
            entry_id = f"{s.next}-0"
            s.waiting[entry_id] = (group_id, bytes(payload))
            s.lock.notify_all()
            return entry_id

    def take(self, n: int, block_s: float = 0.0) -> list[Entry]:
        s, deadline = self._s, time.monotonic() + block_s
        with s.lock:
            if self._own_first:
                own = [(int(e.split("-")[0]), e, p) for e, p in s.pending.items() if p[2] == self.name]
                mine = sorted(m for m in own if m[0] > self._cursor and m[1] not in self._held)[:n]
                if mine:
                    self._cursor = mine[-1][0]
                    self._held.update(e for _, e, _ in mine)
                    return [Entry(e, p[0], p[1], True) for _, e, p in mine]
                self._own_first = False
            while not s.waiting and time.monotonic() < deadline:
                s.lock.wait(deadline - time.monotonic())
            out: list[Entry] = []
            while s.waiting and len(out) < n:
                entry_id, (gid, payload) = s.waiting.popitem(last=False)
                s.pending[entry_id] = (gid, payload, self.name, time.monotonic())
                self._held.add(entry_id)
                out.append(Entry(entry_id, gid, payload))
            return out

    def ack(self, entry_ids: Iterable[str]) -> None:
        with self._s.lock:
            for e in entry_ids:
                self._s.pending.pop(e, None)
                self._held.discard(e)

    def reclaim(self, idle_s: float, n: int = 100) -> list[Entry]:
        s, now = self._s, time.monotonic()
        out: list[Entry] = []
        with s.lock:
            for e, (gid, payload, who, since) in list(s.pending.items()):
                if len(out) < n and who != self.name and now - since >= idle_s:
                    s.pending[e] = (gid, payload, self.name, now)
                    self._held.add(e)
                    out.append(Entry(e, gid, payload, True))
        return out

    def depth(self) -> Depth:
        with self._s.lock:
            return Depth(len(self._s.waiting), len(self._s.pending))

    def close(self) -> None:
        pass


class RedisQueue:
    """A Redis stream (`stream`) read through one consumer group (`group`) as `consumer`.

    `url` is a redis:// URL (rlvr.pipeline.redis_server starts a local server and gives one).
    """

    def __init__(
        self,
        url: str,
        stream: str = "rlvr:trajectories",
        group: str = "learner",
        consumer: str = "learner-0",
        retries: int = 8,
    ) -> None:
        try:
            import redis
            from redis.backoff import ExponentialBackoff
            from redis.retry import Retry
        except ImportError as e:  # pragma: no cover - the dist extra is installed by make test
            raise QueueError("queue.backend redis needs the redis package: pip install 'rlvr[dist]'") from e
        self._redis = redis
        self.connection_errors: tuple[type[Exception], ...] = (redis.ConnectionError, redis.TimeoutError)
        self.url, self.stream, self.group, self.consumer = url, stream, group, consumer
        retry = Retry(ExponentialBackoff(cap=2.0, base=0.05), retries)
        self.client = redis.Redis.from_url(
            url,
            retry=retry,
            retry_on_error=[redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError],
            socket_connect_timeout=5.0,
            health_check_interval=0,
        )
        self._own_first = True  # after a restart: this consumer's pending entries come first
        self._cursor = "0"  # the last of them given again so far
        self._held: set[str] = set()  # entry ids handed out by this object, not yet acknowledged
        self._seen: OrderedDict[str, None] = OrderedDict()  # put tokens delivered by this object
        try:
            self.client.xgroup_create(stream, group, id="0", mkstream=True)
        except redis.ResponseError as e:
            if "BUSYGROUP" not in str(e):
                raise QueueError(f"could not create consumer group {group!r} on stream {stream!r}: {e}") from e
        except redis.ConnectionError as e:
            raise QueueError(f"cannot reach Redis at {url}: {e} (is redis-server running? check queue.url)") from e

    def put(self, group_id: str, payload: bytes) -> str:
        # the token is made once, so redis-py's retries of this XADD all carry it
        return _text(self.client.xadd(self.stream, {"g": group_id, "u": uuid.uuid4().hex, "p": payload}))

    def _entries(self, reply: Any, redelivered: bool) -> list[Entry]:
        out = []
        for _, rows in reply or []:
            for entry_id, fields in rows:
                eid = _text(entry_id)
                if not fields:  # pending, but its data was deleted: nothing to give, nothing to keep
                    self.client.xack(self.stream, self.group, eid)
                    continue
                if eid in self._held:  # handed out already by this object (e.g. reclaimed, then walked)
                    continue
                token = _text(fields.get(b"u", entry_id))
                if not redelivered and token in self._seen:  # a retried put that had arrived: drop the copy
                    self.client.xack(self.stream, self.group, eid)
                    self.client.xdel(self.stream, eid)
                    continue
                self._seen[token] = None
                if len(self._seen) > 1_000_000:
                    self._seen.popitem(last=False)
                self._held.add(eid)
                out.append(Entry(eid, _text(fields[b"g"]), bytes(fields[b"p"]), redelivered))
        return out

    def take(self, n: int, block_s: float = 0.0) -> list[Entry]:
        while self._own_first:  # this consumer's history (pending entries), oldest first, once
            reply: Any = self.client.xreadgroup(self.group, self.consumer, {self.stream: self._cursor}, count=n)
            rows = reply[0][1] if reply else []
            if not rows:
                self._own_first = False
                break
            self._cursor = _text(rows[-1][0])
            own = self._entries(reply, redelivered=True)
            if own:
                return own
        block = max(1, math.ceil(block_s * 1000)) if block_s > 0 else None  # BLOCK 0 would wait forever
        new: Any = self.client.xreadgroup(self.group, self.consumer, {self.stream: ">"}, count=n, block=block)
        return self._entries(new, redelivered=False)

    def ack(self, entry_ids: Iterable[str]) -> None:
        ids = list(entry_ids)
        if not ids:
            return
        pipe = self.client.pipeline(transaction=True)
        pipe.xack(self.stream, self.group, *ids)
        pipe.xdel(self.stream, *ids)
        pipe.execute()
        self._held.difference_update(ids)

    def reclaim(self, idle_s: float, n: int = 100) -> list[Entry]:
        reply = self.client.xautoclaim(self.stream, self.group, self.consumer, int(idle_s * 1000), "0-0", count=n)
        # XAUTOCLAIM replies [next cursor, [[id, fields], ...], [deleted ids]]; it does not say
        # whose entries it took: this consumer's own (held here) are left out by _entries
        return self._entries([(self.stream, reply[1])], redelivered=True)

    def depth(self) -> Depth:
        info = self.client.xinfo_groups(self.stream)
        mine = next((g for g in info if _text(g.get("name")) == self.group), None)
        pending = int(mine["pending"]) if mine else 0
        lag = mine.get("lag") if mine else None
        waiting = int(lag) if lag is not None else max(int(self.client.xlen(self.stream)) - pending, 0)
        return Depth(waiting, pending)

    def close(self) -> None:
        self.client.close()


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)
