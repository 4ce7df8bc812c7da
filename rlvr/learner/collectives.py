"""Process groups for training across ranks (`torchrun`, later the Ray runner).

`init()` reads the launcher's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
MASTER_PORT), picks the backend from the device (nccl for CUDA, gloo for the CPU) and
binds each rank to its GPU; a process started without a launcher gets a group of one
(on a free local port), so the same code runs alone. The helpers below are thin,
typed wrappers over torch.distributed for the few collectives the learner needs.
"""

from __future__ import annotations

import gc
import os
import socket
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh

from rlvr.rollout.models import resolve_device

T = TypeVar("T")


@dataclass(frozen=True)
class DistEnv:
    """This process's place: global rank, number of ranks, rank on its node."""

    rank: int
    world_size: int
    local_rank: int

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def launch_env() -> DistEnv:
    """The launcher's variables (a single process without them: rank 0 of 1)."""
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", str(rank)))
    if not 0 <= rank < world:
        raise ValueError(f"RANK={rank} is outside WORLD_SIZE={world}")
    return DistEnv(rank, world, local)


def launched() -> bool:
    """True under a launcher that started more than one rank (torchrun, Ray)."""
    return launch_env().world_size > 1


def backend_for(device: torch.device) -> str:
    return "nccl" if device.type == "cuda" else "gloo"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def init(device: str = "auto", *, timeout_s: float = 600.0) -> tuple[DistEnv, torch.device]:
    """Join (or create) the default process group; (this rank's place, its device).

    With CUDA each rank takes GPU `LOCAL_RANK`. Calling it again in a process that
    already joined returns the same answer."""
    env = launch_env()
    dev = resolve_device(device)
    if dev.type == "cuda":
        dev = torch.device("cuda", env.local_rank)
        torch.cuda.set_device(dev)
    if not dist.is_initialized():
        if env.world_size == 1:  # alone: a group of one on this machine
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", str(_free_port()))
        dist.init_process_group(
            backend_for(dev),
            rank=env.rank,
            world_size=env.world_size,
            timeout=timedelta(seconds=timeout_s),
            device_id=dev if dev.type == "cuda" else None,
        )
    return DistEnv(dist.get_rank(), dist.get_world_size(), env.local_rank), dev


def shutdown(*, barrier: bool = True) -> None:
    """Leave the process group, after a last barrier so that no rank exits while the
    others still talk to it (skip it after an error: the others may never arrive).

    Garbage is collected first: a learner dropped in a reference cycle (FSDP modules,
    their mesh) keeps the gloo group and its finished work items, which hold tensors,
    alive until the interpreter is torn down, and freeing them then can abort the
    process ("terminate called without an active exception", pytorch PR 179291)."""
    if dist.is_initialized():
        gc.collect()
        if barrier:
            dist.barrier()
        dist.destroy_process_group()
        gc.collect()


def mesh(device: torch.device) -> DeviceMesh:
    """A one-dimensional mesh over every rank (what FSDP shards across)."""
    return init_device_mesh(device.type, (dist.get_world_size(),), mesh_dim_names=("dp",))


def rank() -> int:
    return dist.get_rank() if dist.is_initialized() else 0


def world_size() -> int:
    return dist.get_world_size() if dist.is_initialized() else 1


def all_gather_objects(obj: T) -> list[T]:
    """Every rank's `obj` (picklable), in rank order, on every rank."""
    if world_size() == 1:
        return [obj]
    out: list[Any] = [None] * world_size()
    dist.all_gather_object(out, obj)
    return out


def broadcast_object(obj: T, src: int = 0) -> T:
    """Rank `src`'s `obj` on every rank (the others pass anything, e.g. None)."""
    if world_size() == 1:
        return obj
    box: list[Any] = [obj]
    dist.broadcast_object_list(box, src=src)
    return box[0]


def all_reduce_max(value: int, device: torch.device) -> int:
    """The largest `value` over the ranks."""
    if world_size() == 1:
        return value
    t = torch.tensor([value], dtype=torch.int64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return int(t.item())


def all_reduce_sum(values: list[float], device: torch.device) -> list[float]:
    """Element-wise sums over the ranks, in float64 (counts stay exact)."""
    if world_size() == 1:
        return list(values)
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return [float(x) for x in t.tolist()]


def gather_batch(local: list[T]) -> list[T]:
    """The whole batch on every rank from each rank's share (rank order), for rollouts
    that ran on every rank: the sharded learner takes the whole batch."""
    return [x for part in all_gather_objects(local) for x in part]


def barrier() -> None:
    if dist.is_initialized():
        dist.barrier()
