"""The `queue`, `storage` and `dist` sections: how batches reach the learner, where
checkpoints are copied, the roles on Ray.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rlvr.config.base import _Section


class QueueConfig(_Section):
    backend: Literal["memory", "redis"] = "memory"
    """How each step's rollout batch reaches the learner. 'memory': handed over in the
    process (batches generated but not yet trained are saved in each checkpoint). 'redis':
    through a Redis stream that outlives the process: a batch is acknowledged only after
    the checkpoint that includes its update, so a run killed at any point resumes with
    the batches it had generated and trains each exactly once (docs/distributed.md)."""
    url: str | None = None
    """redis only: a running Redis, e.g. redis://10.0.0.5:6379/0; null starts redis-server
    as a child of the run, on a free localhost port, with its append-only file in
    <run directory>/queue, and stops it at exit."""
    stream: str | None = None
    """redis only: the stream's key; null: rlvr:<name>. Runs sharing a server need their own."""
    fsync: Literal["everysec", "always"] = "everysec"
    """The local redis-server's appendfsync: 'always' fsyncs every entry before replying
    (exact across machine crashes, slower), 'everysec' once a second."""


class StorageConfig(_Section):
    uri: str | None = None
    """Durable storage for the run besides its directory: a path or an fsspec URL
    (s3://bucket/prefix needs s3fs). Each checkpoint is copied to <uri>/checkpoints once
    written (the queue acknowledges a step's batches only after that), and a run whose
    directory has no newer checkpoint resumes from there (a new machine, a rescheduled
    pod). Unless set apart, the trace store goes to <uri>/traces (trace.uri) and Ray's
    policy versions to <uri>/weights (dist.weights_uri). null: the run directory only."""


class DistConfig(_Section):
    backend: Literal["local", "ray"] = "local"
    """'local': the whole run in this process tree. 'ray': the roles on Ray actors: rollout
    workers (engine + environments) put batches into the durable queue (queue.backend
    redis), one learner takes them, trains and publishes each policy version as
    safetensors for the workers; optional sandbox workers serve the workers' code
    execution (docs/distributed.md)."""
    address: str | None = None
    """ray: a running cluster to join (e.g. ray://head:10001 or auto); null starts a local
    Ray instance for the run and stops it at the end."""
    rollout_workers: int = Field(1, ge=1)
    """ray: rollout worker actors; each produces whole steps' batches."""
    rollout_cpus: float = Field(1.0, ge=0)
    """ray: CPUs each rollout worker asks for (also its torch threads, as Ray sets them)."""
    rollout_gpus: float = Field(0.0, ge=0)
    """ray: GPUs each rollout worker asks for (a fraction shares one)."""
    learner_cpus: float = Field(1.0, ge=0)
    """ray: CPUs the learner asks for."""
    learner_gpus: float = Field(0.0, ge=0)
    """ray: GPUs the learner asks for."""
    sandbox_workers: int = Field(0, ge=0)
    """ray: sandbox worker actors, each running `rlvr sandbox serve` on its node (custom
    resource 'sandbox' when the cluster has it); rollout workers send code there. 0: each
    rollout worker runs code in its own sandbox pool (or sandbox.url)."""
    sandbox_max_workers: int | None = Field(None, ge=1)
    """ray: the elastic sandbox pool's ceiling: servers are added (up to this) while
    submissions wait for a slot or the slots are busy, and drained and removed (down to
    sandbox_workers) when idle; null: a fixed sandbox_workers."""
    sandbox_scale_period_s: float = Field(5.0, gt=0)
    """ray: how often the driver polls the sandbox servers' load and scales the pool."""
    sandbox_concurrency: int | None = Field(None, ge=1)
    """ray: runs at once in each sandbox server; null: sandbox.workers."""
    sandbox_cpus: float = Field(1.0, ge=0)
    """ray: CPUs each sandbox worker asks for (its server runs sandbox.workers at once)."""
    colocate_sandbox: bool = False
    """ray: give each rollout worker a sandbox worker of its own on the same node (a
    placement group packing the two strictly: code runs where it is generated, without
    crossing the network, and a node's CPUs serve its own rollouts). The worker runs its
    code there first and fails over to the shared pool (sandbox_workers), if any."""
    weights_uri: str | None = None
    """ray: where the learner publishes each policy version (a path or an fsspec URL every
    worker can read, e.g. s3://bucket/run/weights); null: <run directory>/weights, which
    works when every actor shares this file system (one machine, or a shared mount)."""
    produce_timeout_s: float = Field(1800.0, gt=0)
    """ray: a rollout worker that takes longer than this over one step's batch (counted
    from when it is up) is taken as hung: it is killed, Ray restarts it, and the step is
    produced again."""
    heartbeat_timeout_s: float = Field(30.0, gt=0)
    """ray: each rollout worker beats once a second (a counter in Redis, so clocks need not
    agree); one silent this long while it holds a ticket (stopped, frozen, cut off) is
    killed and restarted the same way."""
