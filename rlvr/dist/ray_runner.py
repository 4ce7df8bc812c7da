"""`rlvr train CONFIG dist.backend=ray`: the run's roles on Ray actors.

    driver (this command)        starts or joins Ray, the queue's redis-server, the actors
    ├── sandbox workers (0..n)   each runs `rlvr sandbox serve` on its node
    ├── rollout workers (1..n)   engine + environments: produce(step, version, tasks) → queue
    └── learner (1)              the training loop (rlvr.train.loop), fed by RayRollouts

The learner samples each step's tasks (its curriculum sees every outcome, as in one
process) and hands the step to a rollout worker as a ticket: (step, policy version,
tasks). A ticket for step s is issued once the learner has finished step
s - max_staleness (0 in sync mode), with the newest published version, so the
staleness bound holds across processes. The worker loads that version from the weights
store (safetensors per version, `dist.weights_uri`), generates, scores, and puts the
batch into the Redis stream as entry `step/<s+1>`; the learner takes entries by step
(rlvr.pipeline.channel.QueueChannel, holding ones that arrive early).

Faults, with Ray's own restarts: a rollout worker that dies is restarted by Ray and its
unfinished tickets re-run (max_task_retries); if it had already put its batch, the copy
is dropped by step id. A worker over `dist.produce_timeout_s` on one ticket is killed and
restarted the same way. A learner that dies is restarted by Ray and `train` is called
again: it resumes from its checkpoint, the stream's backlog and the tickets the
checkpoint lists as in flight (re-issued with the same tasks unless their batch is in
the stream). Every batch is acknowledged only after the checkpoint that includes it.

This package is the only one that imports Ray (`pip install 'rlvr[dist]'`).
"""

from __future__ import annotations

import math
import os
import secrets
import sys
import threading
import time
from contextlib import nullcontext, suppress
from typing import Any

from rlvr.config import ConfigError, RunConfig
from rlvr.dist.sandbox_workers import (
    SandboxAutoscaler,
    SandboxFleet,
    SandboxWorkerRole,
    _ray,
    sandbox_load_key,
    sandboxes_key,
)
from rlvr.pipeline.channel import stream_name
from rlvr.pipeline.staleness import StalenessGate, drop_stale, observe
from rlvr.types import Task

CHECK_EVERY_S = 0.5


class TicketSampler:
    """A worker's stand-in for the curriculum: the ticket's tasks, once (the learner's own
    curriculum observes the outcomes when the batch arrives)."""

    def __init__(self, tasks: list[Task]) -> None:
        self.tasks, self.used = tasks, False

    def sample(self, n: int) -> list[Task]:
        if self.used:
            raise RuntimeError("a ticket's tasks are drawn once (dynamic_sampling 'refill' is refused on Ray)")
        self.used = True
        return self.tasks[:n]

    def observe(self, outcomes: list[Any]) -> None:
        pass

    def metrics(self) -> dict[str, float]:
        return {}


class RolloutWorkerRole:
    """Engine + environments + scorer; produces whole steps' batches into the queue."""

    def __init__(
        self,
        cfg: RunConfig,
        index: int,
        weights_root: str,
        cwd: str | None,
        sandboxes: bool = False,
        token: str | None = None,
        local_sandbox: Any = None,
    ) -> None:
        import dataclasses

        import torch

        from rlvr.config import load_plugins
        from rlvr.pipeline.redis_queue import RedisQueue
        from rlvr.envs.settings import env_settings
        from rlvr.rollout.runner import episode_settings
        from rlvr.rollout.models import load_policy
        from rlvr.train.build import seed_everything
        from rlvr.pipeline.channel import QueueChannel
        from rlvr.pipeline.producer import RolloutProducer

        if cwd:
            os.chdir(cwd)
        load_plugins(cfg)
        seed_everything(cfg.seed + 7919 * (index + 1))
        if cfg.train.threads:
            torch.set_num_threads(cfg.train.threads)
        self.index, self.weights_root = index, weights_root
        model, tok = load_policy(
            cfg.model.name_or_path,
            dtype=cfg.model.dtype,
            cache_dir=cfg.model.cache_dir,
            seed=cfg.seed,
            device=cfg.model.device,
        )
        self.model = model
        assert cfg.queue.url is not None
        stream = stream_name(cfg)
        self.queue = RedisQueue(cfg.queue.url, stream=stream)
        self.channel = QueueChannel(self.queue)
        settings = env_settings(cfg)
        self.fleet = None
        if sandboxes or local_sandbox is not None:
            key = sandboxes_key(stream) if sandboxes else ""
            self.fleet = SandboxFleet(self._client_for(cfg), key, token, first=index, local=local_sandbox)
        if self.fleet is not None:
            settings = dataclasses.replace(settings, sandbox_runner=self.fleet)
        episodes = episode_settings(cfg, group_size=cfg.algo.group_size, env=settings)
        self.producer = RolloutProducer(cfg, model, tok, episodes, TicketSampler([]))  # type: ignore[arg-type]
        self.version: int | None = None
        client, key = self.queue.client, heartbeat_key(stream, index)
        threading.Thread(target=_beat, args=(client, key), daemon=True).start()

    def _client_for(self, cfg: RunConfig) -> Any:
        return self.queue.client

    def pid(self) -> int:
        return os.getpid()

    def produce(self, step: int, version: int, tasks: list[Task]) -> dict[str, Any]:
        from rlvr.rollout.weights import read_version

        t0 = time.perf_counter()
        if version != self.version:
            weights = read_version(self.weights_root, version)
            missing, unexpected = self.model.load_state_dict(weights, strict=False)
            if missing or unexpected:
                raise RuntimeError(
                    f"policy version {version} does not fit the worker's model {type(self.model).__name__}: "
                    f"missing {missing[:3]}, unexpected {unexpected[:3]}"
                )
            self.producer.publish(self.model, version, copy_weights=False)
            self.version = version
        t1 = time.perf_counter()
        self.producer.sampler = TicketSampler(tasks)  # type: ignore[assignment]
        batch = self.producer.produce(step, version)
        batch.stats["worker"] = float(self.index)
        batch.stats["weights_load_s"] = t1 - t0
        if self.fleet is not None:
            batch.stats["sandbox_failovers"] = float(self.fleet.failovers)
            if self.fleet.local is not None:  # the share of this worker's executions run beside it
                batch.stats["sandbox_local_share"] = self.fleet.local_runs / max(1, self.fleet.runs)
        self.channel.put(batch, None)
        return {"step": step, "worker": self.index, "groups": len(batch.groups), "s": time.perf_counter() - t0}


def heartbeat_key(stream: str, index: int) -> str:
    return f"{stream}:heartbeat:{index}"


def _beat(client: Any, key: str) -> None:
    """Once a second: `<pid>:<count>` under `key` (the learner watches it change)."""
    n = 0
    while True:
        n += 1
        with suppress(Exception):  # Redis restarting: the next beat tries again
            client.set(key, f"{os.getpid()}:{n}", ex=3600)
        time.sleep(1.0)


class RayRollouts:
    """The learner's rollouts: tickets out to the workers, batches in from the queue."""

    def __init__(
        self, parts: Any, channel: Any, in_flight: dict[str, list[str]], workers: list[Any], root: str
    ) -> None:
        from rlvr.rollout.lora import merged_copy

        self.ray = _ray()
        self.channel, self.workers, self.root = channel, workers, root
        cfg = parts.cfg
        self.cfg, self.sampler = cfg, parts.sampler
        self.max_staleness = cfg.rollout.max_staleness if cfg.rollout.mode == "async" else 0
        self.end = cfg.train.steps
        self.gate = StalenessGate(self.max_staleness, parts.start)
        self.version = parts.learner.version
        self.tasks = {t.id: t for t in parts.inputs.train_tasks}
        self._merged = merged_copy if cfg.model.lora else None
        # step -> (ref, worker, task ids, issued at)
        self.issued: dict[int, tuple[Any, int, list[str], float]] = {}
        self.timeouts = 0
        stream = channel.queue.stream
        self.beat_keys = [heartbeat_key(stream, i) for i in range(len(workers))]
        # per worker: (last beat value, when it changed; monotonic), and whether a restart is awaited
        self.beats: dict[int, tuple[bytes | None, float]] = {}
        self.restarting: dict[int, bytes | None] = {}
        self._publish_weights(parts.model, self.version)
        # the channel holds the backlog (generated before a restart, not trained), to be trained first
        for key, ids in sorted(in_flight.items(), key=lambda kv: int(kv[0])):  # tickets the checkpoint had out
            step = int(key)
            if not channel.holds(step) and step >= parts.start:
                self._send(step, [self._task(i) for i in ids])
        self.next_step = max([parts.start, *(s + 1 for s in channel.held_steps()), *(s + 1 for s in self.issued)])
        self._issue()

    def _task(self, task_id: str) -> Task:
        if task_id not in self.tasks:
            raise ConfigError(f"the checkpoint's ticket names task {task_id!r}, which the task set no longer has")
        return self.tasks[task_id]

    def _publish_weights(self, model: Any, version: int) -> None:
        from rlvr.rollout.weights import prune_older, write_version

        src = self._merged(model) if self._merged else model
        write_version(self.root, version, src.state_dict())
        prune_older(self.root, version - self.max_staleness - 1)

    def _send(self, step: int, tasks: list[Task]) -> None:
        load = [sum(1 for _, w, _, _ in self.issued.values() if w == i) for i in range(len(self.workers))]
        w = min(range(len(self.workers)), key=lambda i: (load[i], (i - step) % len(self.workers)))
        ref = self.workers[w].produce.remote(step, self.version, tasks)
        self.issued[step] = (ref, w, [t.id for t in tasks], time.monotonic())

    def _issue(self) -> None:
        """Tickets for every step the staleness bound allows now."""
        while self.next_step < self.end and self.gate.may_start(self.next_step):
            if self.next_step not in self.issued and not self.channel.holds(self.next_step):
                self._send(self.next_step, self.sampler.sample(self.cfg.train.prompts_per_step))
            self.next_step += 1

    def _check(self) -> None:
        """Surface a worker's error; re-issue a ticket whose worker is gone for good; kill a
        worker that holds a ticket and has stopped beating (heartbeat_timeout_s) or has
        spent produce_timeout_s on it since it was up: Ray restarts it and runs its
        tickets again (max_task_retries)."""
        ray = self.ray
        refs = {ref: step for step, (ref, _, _, _) in self.issued.items()}
        if not refs:
            return
        ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=0)
        for ref in ready:
            step = refs[ref]
            try:
                ray.get(ref)
            except ray.exceptions.RayActorError:  # restarts exhausted: another worker takes the ticket
                _, w, ids, _ = self.issued.pop(step)
                if self.channel.missing(step):
                    self._send(step, [self._task(i) for i in ids])
            except ray.exceptions.RayTaskError as e:  # the worker's own error (e.g. RolloutFailed)
                raise e.as_instanceof_cause() from None
        now = time.monotonic()
        busy = {w for _, w, _, _ in self.issued.values()}
        values = self.channel.queue.client.mget([self.beat_keys[w] for w in sorted(busy)]) if busy else []
        for w, value in zip(sorted(busy), values, strict=True):
            last, since = self.beats.get(w, (None, now))
            if value != last:
                self.beats[w] = (value, now)
                since = now
            pid = value.split(b":")[0] if value else None
            if w in self.restarting:
                if pid is None or pid == self.restarting[w]:
                    continue  # the old process's last beat: the new one is not up yet
                del self.restarting[w]  # up again: its tickets' clocks start now
                for step, (ref, ww, ids, _) in list(self.issued.items()):
                    if ww == w:
                        self.issued[step] = (ref, w, ids, now)
            silent = now - since > self.cfg.dist.heartbeat_timeout_s
            limit = self.cfg.dist.produce_timeout_s
            slow = [s for s, (_, ww, _, t) in self.issued.items() if ww == w and now - t > limit]
            if silent or slow:
                why = (
                    f"no heartbeat for {now - since:.0f} s"
                    if silent
                    else f"step {slow[0] + 1} over {self.cfg.dist.produce_timeout_s:.0f} s"
                )
                print(f"rollout worker {w}: {why}; restarting it", file=sys.stderr, flush=True)
                ray.kill(self.workers[w], no_restart=False)
                self.restarting[w] = pid
                self.timeouts += 1

    def next(self, step: int, version: int) -> Any:
        while True:
            batch = self.channel.take(step, block_s=CHECK_EVERY_S)
            if batch is not None:
                break
            self._check()
            if step not in self.issued:  # neither in the queue nor out: issue it (cannot happen in order)
                self._issue()
                if step not in self.issued:
                    self._send(step, self.sampler.sample(self.cfg.train.prompts_per_step))
        self.issued.pop(step, None)
        groups = [*batch.groups, *batch.dropped]
        observe(self.sampler, groups)
        batch.curriculum = self.sampler.metrics()
        batch.stats["worker_timeouts"] = float(self.timeouts)
        raw = self.channel.queue.client.get(sandbox_load_key(self.channel.queue.stream))
        if raw:  # the elastic sandbox pool's load, as the driver last measured it
            import json

            batch.stats.update({k.replace("/", "_"): float(v) for k, v in json.loads(raw).items()})
        return drop_stale(batch, version, self.max_staleness)  # a backlog batch older than the bound

    def publish(self, model: Any, version: int) -> None:
        self._publish_weights(model, version)
        self.version = version
        self.gate.step_finished()
        self._issue()

    def pause(self) -> Any:
        return nullcontext()  # the sampler is touched only by the loop's own thread

    def state_dict(self) -> dict[str, Any]:
        """Tickets out and not yet trained: re-issued with the same tasks after a restart."""
        return {"pending": [], "in_flight": {str(s): ids for s, (_, _, ids, _) in self.issued.items()}}

    def queue_state(self) -> dict[str, Any]:
        state: dict[str, Any] = self.channel.state_dict()
        return state

    def after_checkpoint(self) -> None:
        self.channel.acknowledge()

    def close(self) -> None:
        self.channel.close()


class LearnerRole:
    """The training loop, fed by RayRollouts."""

    def __init__(self, cfg: RunConfig, cwd: str | None) -> None:
        from rlvr.config import load_plugins

        if cwd:
            os.chdir(cwd)
        load_plugins(cfg)
        self.cfg = cfg

    def pid(self) -> int:
        return os.getpid()

    def train(self, workers: list[Any], weights_root: str, resume: bool, quiet: bool) -> Any:
        from rlvr.train.checkpoint import latest_checkpoint
        from rlvr.train.loop import train

        cfg = self.cfg
        # called again by Ray after this actor died: continue from the checkpoint
        resume = resume or latest_checkpoint(cfg.run_dir / "checkpoints") is not None

        def rollouts(parts: Any, channel: Any, in_flight: dict[str, list[str]]) -> RayRollouts:
            return RayRollouts(parts, channel, in_flight, workers, weights_root)

        return train(cfg, resume=resume, quiet=quiet, plain=True, rollouts_factory=rollouts)


def run_on_ray(cfg: RunConfig, *, resume: bool = False, quiet: bool = False) -> Any:
    """The whole run on Ray (see the module's docstring); returns its TrainSummary."""
    ray = _ray()
    from rlvr.pipeline.redis_server import LocalRedis

    d = cfg.dist
    cwd = None
    own = False
    if not ray.is_initialized():
        env = {"PYTHONPATH": os.pathsep.join(p for p in [os.getcwd(), os.environ.get("PYTHONPATH", "")] if p)}
        if d.address:
            ray.init(address=d.address, runtime_env={"env_vars": env}, log_to_driver=True)
        else:  # a local instance: as many CPUs as the roles ask for, even past this machine's
            sandboxes = max(d.sandbox_workers, d.sandbox_max_workers or 0)  # room for the pool's ceiling
            sandboxes += d.rollout_workers if d.colocate_sandbox else 0
            need = d.learner_cpus + d.rollout_workers * d.rollout_cpus + sandboxes * d.sandbox_cpus
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # localhost only, and for this run alone
            ray.init(
                num_cpus=max(os.cpu_count() or 1, math.ceil(need)),
                include_dashboard=False,
                runtime_env={"env_vars": env},
                log_to_driver=True,
            )
            own = True
    if not d.address:
        cwd = os.getcwd()  # the actors run on this machine: the same relative paths
    server = None
    watcher: threading.Thread | None = None
    scaler: SandboxAutoscaler | None = None
    stop = threading.Event()
    actors: list[Any] = []
    groups: list[Any] = []  # placement groups (dist.colocate_sandbox)
    try:
        if cfg.queue.url is None:  # the run's own redis-server, on this machine, kept running
            server = LocalRedis(cfg.run_dir / "queue", fsync=cfg.queue.fsync)
            cfg = cfg.model_copy(update={"queue": cfg.queue.model_copy(update={"url": server.start()})})
            watcher = threading.Thread(target=_keep_running, args=(server, stop), name="rlvr-redis-watch", daemon=True)
            watcher.start()
        storage = cfg.storage.uri.rstrip("/") + "/weights" if cfg.storage.uri else None
        weights_root = d.weights_uri or storage or str((cfg.run_dir / "weights").resolve())
        token = secrets.token_hex(16)
        scaler = None
        if d.sandbox_workers:
            import redis

            stream = stream_name(cfg)
            assert cfg.queue.url is not None
            scaler = SandboxAutoscaler(cfg, redis.Redis.from_url(cfg.queue.url), stream, token, stop)
            scaler.start()  # the first servers up and listed before the workers need them
        worker_cls = ray.remote(RolloutWorkerRole)
        workers = []
        for i in range(d.rollout_workers):
            placement: dict[str, Any] = {}
            local = None
            if d.colocate_sandbox:
                pg, local = _colocated_sandbox(ray, cfg, token, i)
                groups.append(pg)
                actors.append(local)
                placement = {"scheduling_strategy": _in_bundle(pg, 0)}
            workers.append(
                worker_cls.options(
                    num_cpus=d.rollout_cpus,
                    num_gpus=d.rollout_gpus,
                    max_restarts=-1,
                    max_task_retries=-1,
                    **placement,
                ).remote(cfg, i, weights_root, cwd, scaler is not None, token, local)
            )
        actors += workers
        learner = (
            ray.remote(LearnerRole)
            .options(num_cpus=d.learner_cpus, num_gpus=d.learner_gpus, max_restarts=3, max_task_retries=3)
            .remote(cfg, cwd)
        )
        actors.append(learner)
        return ray.get(learner.train.remote(workers, weights_root, resume, quiet))
    finally:
        stop.set()
        if scaler is not None:
            scaler.close()
            actors += scaler.actors + [a for a, _ in scaler.starting]
        for a in actors:
            with suppress(Exception):  # already gone
                ray.kill(a)
        for pg in groups:
            with suppress(Exception):
                ray.util.remove_placement_group(pg)
        if watcher is not None:
            watcher.join(timeout=30)  # it may be starting the server again: let it finish, then stop it
        if server is not None:
            server.close()
        if own:
            ray.shutdown()


def _in_bundle(pg: Any, index: int) -> Any:
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    return PlacementGroupSchedulingStrategy(placement_group=pg, placement_group_bundle_index=index)


def _colocated_sandbox(ray: Any, cfg: RunConfig, token: str, index: int) -> tuple[Any, Any]:
    """Rollout worker `index`'s placement group (bundle 0: the worker, bundle 1: its sandbox
    worker, STRICT_PACK: one node) and the sandbox worker, started in it."""
    d = cfg.dist
    worker = {"CPU": d.rollout_cpus, **({"GPU": d.rollout_gpus} if d.rollout_gpus else {})}
    pg = ray.util.placement_group([worker, {"CPU": d.sandbox_cpus}], strategy="STRICT_PACK", name=f"rollout-{index}")
    try:
        ray.get(pg.ready(), timeout=300)
    except Exception as e:
        raise ConfigError(
            f"dist.colocate_sandbox: no node has room for rollout worker {index} beside its sandbox worker "
            f"({worker} + {{'CPU': {d.sandbox_cpus}}}): {type(e).__name__}: {e}"
        ) from None
    print(f"placement: rollout worker {index} and its sandbox worker packed on one node", file=sys.stderr, flush=True)
    sandbox = (
        ray.remote(SandboxWorkerRole)
        .options(num_cpus=d.sandbox_cpus, scheduling_strategy=_in_bundle(pg, 1), max_restarts=-1, max_task_retries=-1)
        .remote(d.sandbox_concurrency or cfg.sandbox.workers, token, cfg.sandbox.token_env)
    )
    return pg, sandbox


def _keep_running(server: Any, stop: threading.Event) -> None:
    """The queue's redis-server, started again (same port and files) if it dies."""
    while not stop.wait(0.5):
        if not server.alive() and not stop.is_set():
            print(f"queue: redis-server exited; starting it again on {server.url}", file=sys.stderr, flush=True)
            try:
                server.start()
            except Exception as e:
                print(f"queue: could not start redis-server again: {e}", file=sys.stderr, flush=True)
