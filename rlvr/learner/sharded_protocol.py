"""How rank 0 drives the other ranks of a leading sharded learner, and how a failure ends them.

With `lead=True` rank 0 alone calls the learner, as the single-process loop calls
`Learner`; the other ranks wait in `follow()`. Each collective method is `@mirrored`:
on rank 0 its name and arguments are broadcast before it runs, and each follower makes
the same call, so the collectives inside it meet. `close()` sends "close", which ends
`follow()`; after it both sides reach the same shutdown (a last barrier, see
`rlvr.train.sharded.run_launched`).

A failure inside a mirrored call leaves the ranks out of step: the others wait in a
collective (rank 0's barrier in `save`, a broadcast of weights...) that will never
complete, and no message can reach them there (a mismatched collective can hang or
read the wrong data). So the rank that failed aborts: it writes its error to the
group's store (`ABORT_KEY`) and leaves the process group at once, with no further
collective (`abort_group`), then raises. A follower learns of it from the store: while
it follows (`exit_on_abort`), a thread polls the store every second and, once a rank
has aborted, prints that rank's error and ends the follower's process (exit code 1);
a rank blocked in a collective cannot be woken otherwise (gloo), or not before the
group's timeout (NCCL). Failing that (the store gone with its host), the follower's
collective fails when rank 0's process exits (gloo; `follow()` raises `PeerFailed`), and
under torchrun the launcher stops every worker once one exits non-zero. A learner whose
call failed refuses further calls, and its `close()` sends nothing.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

import torch.distributed as torch_dist
from torch.distributed import distributed_c10d as c10d

from rlvr.learner import collectives as dist

__all__ = ["ABORT_KEY", "LeadFollow", "PeerFailed", "abort_group", "abort_reason", "exit_on_abort", "mirrored"]

ABORT_KEY = "rlvr/sharded/abort"
"""Key in the default process group's store holding the first failed rank's error."""

P = ParamSpec("P")
R = TypeVar("R")
L = TypeVar("L", bound="LeadFollow")


class PeerFailed(RuntimeError):
    """Another rank failed while this one waited for it (its error is in the message)."""


def _store() -> Any:
    return c10d._get_default_store() if torch_dist.is_initialized() else None


def abort_reason() -> str | None:
    """The error a failed rank left in the store, if it did and the store still answers."""
    try:
        store = _store()
        if store is not None and store.check([ABORT_KEY]):
            return cast(bytes, store.get(ABORT_KEY)).decode(errors="replace")
    except Exception:  # the store lives with a rank or launcher that may be gone
        pass
    return None


def abort_group(reason: str) -> None:
    """Leave the process group at once, with no barrier, after a failure that left the
    ranks out of step: `reason` goes to the store (unless a rank that failed earlier left
    one), then this rank leaves the group (destroyed; its sockets, and with them the
    others' pending gloo collectives, end when this process exits: `exit_on_abort` is
    what ends the others sooner). Does nothing outside a process group (or after it was left)."""
    if not torch_dist.is_initialized():
        return
    try:
        store = _store()
        if not store.check([ABORT_KEY]):
            store.set(ABORT_KEY, reason)
    except Exception:
        pass
    torch_dist.destroy_process_group()


_watching = False  # an exit_on_abort thread runs in this process


@contextlib.contextmanager
def exit_on_abort(rank: int, interval_s: float = 1.0) -> Iterator[None]:
    """While inside, a daemon thread polls the process group's store every `interval_s`
    seconds; once a rank has aborted (`abort_group`), it prints that rank's error and
    ends this process at once (`os._exit(1)`: nothing to flush on a follower, and a
    collective that will never complete cannot be interrupted). Nested uses, a group of
    one or no group: nothing. The thread stops when the block ends, before this rank's
    own abort, if any."""
    global _watching
    store = _store()
    if _watching or store is None or dist.world_size() == 1:
        yield
        return
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(interval_s):
            try:
                reason = (
                    cast(bytes, store.get(ABORT_KEY)).decode(errors="replace") if store.check([ABORT_KEY]) else None
                )
            except Exception:  # the store is gone with its host: the collectives fail on their own
                return
            if reason is not None and not stop.is_set():
                print(f"rank {rank}: stopping, another rank failed: {reason}", file=sys.stderr, flush=True)
                os._exit(1)

    thread = threading.Thread(target=watch, name="rlvr-abort-watch", daemon=True)
    _watching = True
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2 * interval_s + 5)
        _watching = False


def _describe(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:2000]}" if text else type(e).__name__


def mirrored(fn: Callable[Concatenate[L, P], R]) -> Callable[Concatenate[L, P], R]:
    """A collective method: on rank 0 of a leading learner, the other ranks (in
    `follow()`) are told to make the same call first. Calls made inside another mirrored
    call are not announced again. If the call fails on rank 0, the group is aborted
    (module docstring) and the error re-raised."""

    @functools.wraps(fn)
    def call(self: L, *args: P.args, **kwargs: P.kwargs) -> R:
        if not (self.lead and self.rank == 0) or self._busy:
            return fn(self, *args, **kwargs)
        self._check_usable(fn.__name__)
        self._busy = True
        try:
            dist.broadcast_object((fn.__name__, self._announced(fn.__name__, args, kwargs)))
            return fn(self, *args, **kwargs)
        except BaseException as e:
            self._fail(fn.__name__, e)
            raise
        finally:
            self._busy = False

    return call


class LeadFollow:
    """The rank-0 / follower protocol of a learner built with `lead=True` (mixed into
    `ShardedLearner`, which sets `lead` and `rank`)."""

    lead: bool = False
    rank: int = 0
    _busy: bool = False  # inside a mirrored call (nested calls are not announced)
    _closed: bool = False  # rank 0 sent "close" / this follower received it
    _failed: str | None = None  # the mirrored call that failed (the group was aborted)

    @property
    def closed(self) -> bool:
        """The protocol ended in step: "close" sent (rank 0) or received (a follower),
        and no call failed; then every rank can meet in a last barrier."""
        return self._closed and self._failed is None

    def _announced(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """What the other ranks receive of a call (a subclass may leave out what they get
        otherwise, e.g. as tensors)."""
        return args, kwargs

    def _check_usable(self, name: str) -> None:
        if self._failed is not None:
            raise RuntimeError(
                f"{name}(): the sharded learner stopped after rank 0 failed in {self._failed}(); "
                "the other ranks have left"
            )
        if self._closed:
            raise RuntimeError(f"{name}(): the sharded learner was closed; the other ranks have left follow()")

    def _fail(self, name: str, e: BaseException) -> None:
        """Rank 0: the call `name` failed with `e`; abort the group (module docstring)."""
        self._failed = name
        abort_group(f"rank {self.rank} failed in {name}(): {_describe(e)}")

    def follow(self) -> None:
        """On a rank other than 0 of a leading learner: make rank 0's collective calls
        until it calls `close()`. When rank 0 aborts meanwhile, this process ends
        (`exit_on_abort`) or, failing that, `PeerFailed` is raised."""
        if self.rank == 0 or not self.lead:
            raise RuntimeError("follow() is for ranks other than 0 of a learner built with lead=True")
        with exit_on_abort(self.rank):
            self._follow()

    def _follow(self) -> None:
        while True:
            name = "follow"
            try:
                msg = cast(tuple[str, tuple[tuple[Any, ...], dict[str, Any]]], dist.broadcast_object(None))
                name, (args, kwargs) = msg
                if name == "close":
                    self._closed = True
                    return
                getattr(self, name)(*args, **kwargs)
            except Exception as e:
                reason = abort_reason()
                if reason is None:
                    raise
                where = f"in {name}()" if name != "follow" else "waiting for rank 0's next call"
                raise PeerFailed(f"{reason} (rank {self.rank} was {where}, and stops too)") from e

    def close(self) -> None:
        """Rank 0 of a leading learner: release the other ranks from `follow()`. Nothing
        on other ranks, without `lead`, a second time, or after a failed call (the other
        ranks have left)."""
        if not (self.lead and self.rank == 0) or self._closed or self._failed is not None:
            return
        try:
            dist.broadcast_object(("close", ((), {})))
        except BaseException as e:
            self._fail("close", e)
            raise
        self._closed = True
