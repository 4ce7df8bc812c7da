"""The trajectory queue's contract on both backends, against a real redis-server: what is
put is taken, pending until acknowledged, given again to a restarted consumer, claimed
back from a dead one, and survives redis-server being killed and restarted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlvr.pipeline.redis_queue import MemoryQueue, QueueError, RedisQueue
from rlvr.pipeline.redis_server import LocalRedis

HAVE_REDIS = shutil.which("redis-server") is not None
UNDER_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")  # there a missing redis-server fails the tests
needs_redis = pytest.mark.skipif(
    not HAVE_REDIS and not UNDER_CI, reason="redis-server not installed (make redis installs it)"
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LocalRedis]:
    with LocalRedis(tmp_path / "queue") as s:
        yield s


@pytest.fixture(params=["memory", pytest.param("redis", marks=needs_redis)])
def queues(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    """A factory of consumers of one queue: queues(name) -> a queue object reading as `name`."""
    if request.param == "memory":
        shared = MemoryQueue()
        yield lambda name="learner-0": shared.consumer(name)
        return
    with LocalRedis(tmp_path / "queue") as s:
        made: list[RedisQueue] = []

        def factory(name: str = "learner-0") -> RedisQueue:
            made.append(RedisQueue(s.url, consumer=name))
            return made[-1]

        yield factory
        for q in made:
            q.close()


def test_put_take_ack(queues) -> None:  # type: ignore[no-untyped-def]
    q = queues()
    ids = [q.put(f"g{i}", f"payload {i}".encode()) for i in range(5)]
    assert len(set(ids)) == 5
    assert q.depth().waiting == 5 and q.depth().pending == 0
    got = q.take(3)
    assert [e.group_id for e in got] == ["g0", "g1", "g2"] and got[0].payload == b"payload 0"
    assert not any(e.redelivered for e in got)
    assert q.depth().pending == 3 and q.depth().waiting == 2
    q.ack([e.entry_id for e in got])
    assert q.depth().pending == 0
    rest = q.take(10)
    assert [e.group_id for e in rest] == ["g3", "g4"]
    q.ack(e.entry_id for e in rest)
    assert q.take(10) == [] and q.depth().waiting == 0 and q.depth().pending == 0


def test_a_restarted_consumer_gets_its_pending_entries_first(queues) -> None:  # type: ignore[no-untyped-def]
    q = queues()
    for i in range(4):
        q.put(f"g{i}", b"x")
    taken = q.take(2)
    q.ack([taken[0].entry_id])  # g0 done (its checkpoint was written); g1 taken, then the learner died
    again = queues()  # the same consumer name, a new process
    first = again.take(10)
    assert [e.group_id for e in first] == ["g1"] and first[0].redelivered
    assert [e.group_id for e in again.take(10)] == ["g2", "g3"]


def test_entries_of_a_silent_consumer_are_reclaimed(queues) -> None:  # type: ignore[no-untyped-def]
    dead, alive = queues("learner-a"), queues("learner-b")
    for i in range(3):
        dead.put(f"g{i}", b"x")
    assert len(dead.take(2)) == 2  # then learner-a goes silent
    assert alive.reclaim(idle_s=5.0) == []  # not idle long enough yet
    time.sleep(0.3)
    claimed = alive.reclaim(idle_s=0.2)
    assert sorted(e.group_id for e in claimed) == ["g0", "g1"] and all(e.redelivered for e in claimed)
    alive.ack(e.entry_id for e in claimed)
    assert [e.group_id for e in alive.take(10)] == ["g2"]


def test_reclaimed_entries_are_not_given_twice_and_own_ones_are_not_reclaimed(queues) -> None:  # type: ignore[no-untyped-def]
    dead, alive = queues("learner-a"), queues("learner-b")
    for i in range(3):
        dead.put(f"g{i}", b"x")
    dead.take(1)  # g0 goes to learner-a, which then goes silent
    mine = alive.take(1)  # g1 is learner-b's own, not yet acknowledged
    time.sleep(0.3)
    claimed = alive.reclaim(idle_s=0.2)
    assert [e.group_id for e in claimed] == ["g0"]  # not g1: it is learner-b's already
    assert [e.group_id for e in alive.take(10)] == ["g2"]  # neither g0 nor g1 again
    alive.ack([mine[0].entry_id, claimed[0].entry_id])
    assert alive.depth().pending == 1  # g2


def test_a_group_put_again_on_purpose_is_delivered_again(queues) -> None:  # type: ignore[no-untyped-def]
    q = queues()
    q.put("g0", b"first")
    first = q.take(10)
    q.ack(e.entry_id for e in first)
    q.put("g0", b"again")  # same group id, a new put: the learner's trained-id set decides, not the queue
    assert [e.payload for e in q.take(10)] == [b"again"]


def test_take_blocks_until_an_entry_arrives(queues) -> None:  # type: ignore[no-untyped-def]
    q = queues()
    producer = queues("producer")
    timer = threading.Timer(0.3, lambda: producer.put("late", b"x"))
    timer.start()
    t0 = time.monotonic()
    got = q.take(1, block_s=5.0)
    waited = time.monotonic() - t0
    timer.join(10)  # the put has its reply before the fixture closes the clients and the server
    assert [e.group_id for e in got] == ["late"] and 0.2 < waited < 4.0


@needs_redis
def test_entries_survive_kill_9_of_redis_server(server: LocalRedis) -> None:
    q = RedisQueue(server.url)
    for i in range(50):
        q.put(f"g{i}", os.urandom(10_000))
    taken = q.take(10)
    q.ack(e.entry_id for e in taken[:5])
    server.kill()  # no clean shutdown: only what each write already put in the append-only file
    server.start()
    q2 = RedisQueue(server.url)
    pending = q2.take(100)  # the same consumer: its 5 unacknowledged entries first
    assert [e.group_id for e in pending] == [f"g{i}" for i in range(5, 10)]
    rest = q2.take(100)
    assert [e.group_id for e in rest] == [f"g{i}" for i in range(10, 50)]
    q.close()
    q2.close()


@needs_redis
def test_producers_ride_through_a_redis_restart(server: LocalRedis) -> None:
    """Producers keep putting while redis-server is stopped and started again: every group
    arrives, none twice after the consumer's id check."""
    n_threads, per_thread = 4, 60
    errors: list[BaseException] = []

    def produce(k: int) -> None:
        q = RedisQueue(server.url, retries=40)
        try:
            for i in range(per_thread):
                q.put(f"p{k}-{i}", b"y" * 2000)
                time.sleep(0.005)
        except BaseException as e:  # reported below
            errors.append(e)
        finally:
            q.close()

    threads = [threading.Thread(target=produce, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    time.sleep(0.1)
    server.kill()
    time.sleep(0.5)
    server.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    consumer = RedisQueue(server.url)
    got: list[str] = []
    while batch := consumer.take(100):
        got += [e.group_id for e in batch]
        consumer.ack(e.entry_id for e in batch)
    assert sorted(set(got)) == sorted(f"p{k}-{i}" for k in range(n_threads) for i in range(per_thread))
    assert len(got) == len(set(got))
    consumer.close()


CONSUMER = """
import sys, time
from rlvr.pipeline.redis_queue import RedisQueue
q = RedisQueue(sys.argv[1], consumer="doomed")
got = q.take(3)
print(" ".join(e.group_id for e in got), flush=True)
time.sleep(60)  # killed here, before any ack
"""


@needs_redis
def test_a_consumer_killed_mid_batch_loses_nothing(server: LocalRedis) -> None:
    q = RedisQueue(server.url, consumer="survivor")
    for i in range(5):
        q.put(f"g{i}", b"z")
    child = subprocess.Popen([sys.executable, "-c", CONSUMER, server.url], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().split() == ["g0", "g1", "g2"]
    child.kill()  # kill -9 with 3 entries pending
    child.wait()
    assert q.depth().pending == 3
    time.sleep(0.3)
    claimed = q.reclaim(idle_s=0.2)
    assert sorted(e.group_id for e in claimed) == ["g0", "g1", "g2"]
    q.ack(e.entry_id for e in claimed)
    assert [e.group_id for e in q.take(10)] == ["g3", "g4"]
    q.close()


@needs_redis
def test_a_retried_put_that_had_landed_is_dropped_by_its_token(server: LocalRedis) -> None:
    q = RedisQueue(server.url)
    # what a retried XADD leaves when its first try reached the server: the same token twice
    for _ in range(2):
        q.client.xadd(q.stream, {"g": "g0", "u": "token-1", "p": b"x"})
    q.put("g1", b"y")
    assert [e.group_id for e in q.take(10)] == ["g0", "g1"]
    assert q.depth().pending == 2 and q.client.xlen(q.stream) == 2  # the copy is gone
    q.close()


@needs_redis
def test_redis_server_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    code = (
        "import sys, time; from pathlib import Path; from rlvr.pipeline.redis_server import LocalRedis; "
        "s = LocalRedis(Path(sys.argv[1])); s.start(); print(s.proc.pid, flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "q")], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    parent.kill()  # kill -9: no atexit, no close
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.05)
    assert not Path(f"/proc/{pid}").exists() or b"redis-server" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    with LocalRedis(tmp_path / "q") as again:  # the directory is free again
        assert RedisQueue(again.url).depth().waiting == 0


@needs_redis
def test_a_directory_a_live_server_serves_is_refused(server: LocalRedis) -> None:
    with pytest.raises(QueueError, match="still serves"):
        LocalRedis(server.data_dir).start()


def test_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(QueueError, match=r"cannot reach Redis at redis://127\.0\.0\.1:1/0"):
        RedisQueue("redis://127.0.0.1:1/0", retries=0)
    with pytest.raises(QueueError, match=r"queue\.fsync"):
        LocalRedis(tmp_path, fsync="sometimes")
