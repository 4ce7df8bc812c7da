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
(rlvr.train.queued.QueueChannel, holding ones that arrive early).

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
import subprocess
import sys
import threading
import time
from contextlib import nullcontext
from typing import Any

from rlvr.config import ConfigError, RunConfig
from rlvr.types import Task

CHECK_EVERY_S = 0.5


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - installed by make test
        raise ConfigError("dist.backend ray needs Ray: pip install 'rlvr[dist]'") from e
    return ray


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
    ) -> None:
        import dataclasses

        import torch

        from rlvr.config import load_plugins
        from rlvr.dist.queue import RedisQueue
        from rlvr.evaluate import env_settings, make_scorer
        from rlvr.models import load_policy
        from rlvr.train.build import seed_everything
        from rlvr.train.queued import QueueChannel
        from rlvr.train.rollouts import RolloutProducer

        if cwd:
            os.chdir(cwd)
        load_plugins(cfg)
        seed_everything(cfg.seed + 7919 * (index + 1))
        if cfg.train.threads:
            torch.set_num_threads(cfg.train.threads)
        self.index, self.weights_root = index, weights_root
        model, tok = load_policy(
            cfg.model.name_or_path, dtype=cfg.model.dtype, cache_dir=cfg.model.cache_dir, seed=cfg.seed, device=cfg.model.device
        )
        self.model = model
        assert cfg.queue.url is not None
        stream = cfg.queue.stream or f"rlvr:{cfg.name}"
        self.channel = QueueChannel(RedisQueue(cfg.queue.url, stream=stream))
        settings = env_settings(cfg)
        self.fleet = None
        if sandboxes:
            self.fleet = SandboxFleet(self._client_for(cfg), sandboxes_key(stream), token, first=index)
        if self.fleet is not None:
            settings = dataclasses.replace(settings, sandbox_runner=self.fleet)
        self.producer = RolloutProducer(cfg, model, tok, settings, make_scorer(cfg, settings), TicketSampler([]))  # type: ignore[arg-type]
        self.version: int | None = None
        beat = threading.Thread(target=_beat, args=(self.channel.queue.client, heartbeat_key(stream, index)), daemon=True)
        beat.start()

    def _client_for(self, cfg: RunConfig) -> Any:
        return self.channel.queue.client

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
        self.channel.put(batch, None)
        return {"step": step, "worker": self.index, "groups": len(batch.groups), "s": time.perf_counter() - t0}


def heartbeat_key(stream: str, index: int) -> str:
    return f"{stream}:heartbeat:{index}"


def sandboxes_key(stream: str) -> str:
    """The sandbox servers' addresses (a JSON list), kept by the driver."""
    return f"{stream}:sandboxes"


def sandbox_load_key(stream: str) -> str:
    """The sandbox fleet's load (JSON, FleetLoad.as_metrics), written by the driver."""
    return f"{stream}:sandbox-load"


def _beat(client: Any, key: str) -> None:
    """Once a second: `<pid>:<count>` under `key` (the learner watches it change)."""
    n = 0
    while True:
        n += 1
        try:
            client.set(key, f"{os.getpid()}:{n}", ex=3600)
        except Exception:  # noqa: BLE001 - Redis restarting: the next beat tries again
            pass
        time.sleep(1.0)


class SandboxWorkerRole:
    """`rlvr sandbox serve` on this actor's node, on a free port, behind a bearer token;
    started again (on a new port) when asked for its address after it died."""

    def __init__(self, concurrency: int, token: str, token_env: str) -> None:
        self.concurrency, self.token, self.token_env = concurrency, token, token_env
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.starts = 0
        self._start()

    def _start(self) -> None:
        from rlvr.dist.redis_server import _die_with_parent

        ray = _ray()
        env = {**os.environ, self.token_env: self.token}
        cmd = [sys.executable, "-m", "rlvr.cli", "sandbox", "serve", "--host", "0.0.0.0", "--port", "0"]
        cmd += ["--concurrency", str(self.concurrency), "--token-env", self.token_env]
        self.proc = subprocess.Popen(
            cmd, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, preexec_fn=_die_with_parent
        )
        assert self.proc.stderr is not None
        port = None
        for line in self.proc.stderr:
            if "listening on http://" in line:
                port = int(line.split("listening on http://", 1)[1].split()[0].rsplit(":", 1)[1])
                break
        if port is None:
            raise RuntimeError(f"rlvr sandbox serve exited before listening (code {self.proc.wait()})")
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()  # drain its log
        self.url = f"http://{ray.util.get_node_ip_address()}:{port}"
        self.starts += 1

    def address(self) -> str:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        return self.url

    def load(self) -> tuple[str, dict[str, Any]]:
        """(address, the server's load from its /health), the server started again if it died."""
        import httpx

        url = self.address()
        try:
            return url, dict(httpx.get(f"{url}/health", timeout=10).json()["load"])
        except (httpx.HTTPError, KeyError, ValueError):  # not answering: start it again next time
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            raise

    def pid(self) -> int:
        """The server's pid (fault tests)."""
        return self.proc.pid if self.proc is not None else -1

    def __del__(self) -> None:
        proc = getattr(self, "proc", None)
        if proc is not None and proc.poll() is None:
            proc.terminate()


class SandboxFleet:
    """A rollout worker's way to the sandbox workers, whose addresses the driver keeps
    under a Redis key (it adds and removes servers as the load asks: the elastic pool).
    Each request goes to one server in turn; when one cannot be reached, the request goes
    to the next, and after a full round the list is read again (a restarted server has a
    new address) before a second round. The verdict is the server's, as with one sandbox:
    requests carry no state between tries."""

    REFRESH_S = 2.0

    def __init__(self, client: Any, key: str, token: str | None, first: int = 0) -> None:
        self.client, self.key, self.token = client, key, token
        self.urls: list[str] = []
        self.read_at = 0.0
        self.clients: dict[str, Any] = {}
        self.turn = first
        self.lock = threading.Lock()
        self.failovers = 0  # requests that went on to another server (logged as rollout/sandbox_failovers)

    def _addresses(self, force: bool = False) -> list[str]:
        import json

        with self.lock:
            if force or not self.urls or time.monotonic() - self.read_at > self.REFRESH_S:
                raw = self.client.get(self.key)
                self.urls = json.loads(raw) if raw else []
                self.read_at = time.monotonic()
            return list(self.urls)

    def _client(self, url: str) -> Any:
        from rlvr.sandbox.client import SandboxClient

        with self.lock:
            if url not in self.clients:
                self.clients[url] = SandboxClient(url, self.token, retries=1)
            return self.clients[url]

    def run(self, code: str, tests: Any, limits: Any, language: str) -> Any:
        from rlvr.sandbox.pool import SandboxError

        with self.lock:
            start, self.turn = self.turn, self.turn + 1
        last: BaseException | None = None
        for attempt in range(3):
            urls = self._addresses(force=attempt > 0)
            for k in range(len(urls)):
                url = urls[(start + k) % len(urls)]
                try:
                    return self._client(url).run(code, tests, limits, language)
                except SandboxError as e:
                    last = e
                    self.failovers += 1
            time.sleep(1.0 * (attempt + 1))  # the driver or Ray brings servers back meanwhile
        raise SandboxError(f"no sandbox worker answered after three rounds: {last}")


class RayRollouts:
    """The learner's rollouts: tickets out to the workers, batches in from the queue."""

    def __init__(
        self, run: Any, channel: Any, backlog: list[Any], in_flight: dict[str, list[str]], workers: list[Any], root: str
    ) -> None:
        from rlvr.lora import merged_copy

        self.ray = _ray()
        self.run, self.channel, self.workers, self.root = run, channel, workers, root
        cfg = run.cfg
        self.cfg, self.sampler = cfg, run.sampler
        self.max_staleness = cfg.rollout.max_staleness if cfg.rollout.mode == "async" else 0
        self.end = cfg.train.steps
        self.steps_done = run.start
        self.version = run.learner.version
        self.tasks = {t.id: t for t in run.inputs.train_tasks}
        self._merged = merged_copy if cfg.model.lora else None
        # step -> (ref, worker, task ids, issued at)
        self.issued: dict[int, tuple[Any, int, list[str], float]] = {}
        self.timeouts = 0
        stream = channel.queue.stream
        self.beat_keys = [heartbeat_key(stream, i) for i in range(len(workers))]
        # per worker: (last beat value, when it changed; monotonic), and whether a restart is awaited
        self.beats: dict[int, tuple[bytes | None, float]] = {}
        self.restarting: dict[int, bytes | None] = {}
        self._publish_weights(run.model, self.version)
        for b in backlog:  # generated before a restart, not trained: held by step, trained first
            b.stats["from_queue_backlog"] = 1.0
            channel.early[b.step] = (channel._backlog_ids[b.step], b)
        for key, ids in sorted(in_flight.items(), key=lambda kv: int(kv[0])):  # tickets the checkpoint had out
            step = int(key)
            if step not in channel.early and step >= run.start:
                self._send(step, [self._task(i) for i in ids])
        self.next_step = max([run.start, *(s + 1 for s in channel.early), *(s + 1 for s in self.issued)])
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
        while self.next_step < self.end and self.next_step <= self.steps_done + self.max_staleness:
            if self.next_step not in self.issued and self.next_step not in self.channel.early:
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
                if entry_missing(self.channel, step):
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
            slow = [s for s, (_, ww, _, t) in self.issued.items() if ww == w and now - t > self.cfg.dist.produce_timeout_s]
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
        from rlvr.train.rollouts import _outcome

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
        self.sampler.observe([_outcome(g) for g in groups if all(t.status == "ok" for t in g.trajs)])
        batch.curriculum = self.sampler.metrics()
        batch.stats["worker_timeouts"] = float(self.timeouts)
        raw = self.channel.queue.client.get(sandbox_load_key(self.channel.queue.stream))
        if raw:  # the elastic sandbox pool's load, as the driver last measured it
            import json

            batch.stats.update({k.replace("/", "_"): float(v) for k, v in json.loads(raw).items()})
        if version - batch.version > self.max_staleness:  # a backlog batch older than the bound
            batch.stats["stale_dropped"] = float(len(batch.groups))
            batch.dropped += batch.groups
            batch.groups = []
        return batch

    def publish(self, model: Any, version: int) -> None:
        self._publish_weights(model, version)
        self.version = version
        self.steps_done += 1
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


def entry_missing(channel: Any, step: int) -> bool:
    """The step's batch is neither trained nor held (a worker died before its put)."""
    from rlvr.train.queued import entry_id

    return entry_id(step) not in channel.trained and step not in channel.early


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

        def rollouts(run: Any, channel: Any, backlog: list[Any], in_flight: dict[str, list[str]]) -> RayRollouts:
            return RayRollouts(run, channel, backlog, in_flight, workers, weights_root)

        return train(cfg, resume=resume, quiet=quiet, plain=True, rollouts_factory=rollouts)


def run_on_ray(cfg: RunConfig, *, resume: bool = False, quiet: bool = False) -> Any:
    """The whole run on Ray (see the module's docstring); returns its TrainSummary."""
    ray = _ray()
    from rlvr.dist.redis_server import LocalRedis

    d = cfg.dist
    cwd = None
    own = False
    if not ray.is_initialized():
        env = {"PYTHONPATH": os.pathsep.join(p for p in [os.getcwd(), os.environ.get("PYTHONPATH", "")] if p)}
        if d.address:
            ray.init(address=d.address, runtime_env={"env_vars": env}, log_to_driver=True)
        else:  # a local instance: as many CPUs as the roles ask for, even past this machine's
            sandboxes = max(d.sandbox_workers, d.sandbox_max_workers or 0)  # room for the pool's ceiling
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

            stream = cfg.queue.stream or f"rlvr:{cfg.name}"
            assert cfg.queue.url is not None
            scaler = SandboxAutoscaler(cfg, redis.Redis.from_url(cfg.queue.url), stream, token, stop)
            scaler.start()  # the first servers up and listed before the workers need them
        worker_cls = ray.remote(RolloutWorkerRole)
        workers = []
        for i in range(d.rollout_workers):
            workers.append(
                worker_cls.options(
                    num_cpus=d.rollout_cpus,
                    num_gpus=d.rollout_gpus,
                    max_restarts=-1,
                    max_task_retries=-1,
                ).remote(cfg, i, weights_root, cwd, scaler is not None, token)
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
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001 - already gone
                pass
        if watcher is not None:
            watcher.join(timeout=30)  # it may be starting the server again: let it finish, then stop it
        if server is not None:
            server.close()
        if own:
            ray.shutdown()


class SandboxAutoscaler:
    """The elastic sandbox pool, run by the driver: between dist.sandbox_workers and
    dist.sandbox_max_workers servers, polled every dist.sandbox_scale_period_s. Each poll
    lists the servers' addresses for the rollout workers (a restarted server's new one
    included), writes the fleet's load for the learner's metrics (sandbox/*), and adds a
    server when submissions wait or the slots are busy, or drains and removes one when
    idle (rlvr.dist.sandbox_scaler.ScalePolicy)."""

    def __init__(self, cfg: RunConfig, client: Any, stream: str, token: str, stop: threading.Event) -> None:
        from rlvr.dist.sandbox_scaler import ScalePolicy

        d = cfg.dist
        self.cfg, self.client, self.stream, self.token, self.stop = cfg, client, stream, token, stop
        high = d.sandbox_max_workers or d.sandbox_workers
        self.policy = ScalePolicy(d.sandbox_workers, max(high, d.sandbox_workers))
        self.actors: list[Any] = []
        self.starting: list[tuple[Any, Any]] = []  # (actor, its address call): added, not yet serving
        self.last: dict[str, dict[str, Any]] = {}
        self.ray = _ray()
        self.resources = {"sandbox": 1} if self.ray.cluster_resources().get("sandbox", 0) >= 1 else None

    def _add(self) -> Any:
        """A new server; it joins the list once it answers (on a cluster, Ray's autoscaler
        may first have to add a node for it: polls go on meanwhile)."""
        actor = (
            self.ray.remote(SandboxWorkerRole)
            .options(
                num_cpus=self.cfg.dist.sandbox_cpus, resources=self.resources, max_restarts=-1, max_task_retries=-1
            )
            .remote(self.cfg.dist.sandbox_concurrency or self.cfg.sandbox.workers, self.token, self.cfg.sandbox.token_env)
        )
        self.starting.append((actor, actor.address.remote()))
        return actor

    def _started(self) -> None:
        ready, _ = self.ray.wait([ref for _, ref in self.starting], num_returns=len(self.starting), timeout=0)
        for actor, ref in list(self.starting):
            if ref in ready:
                self.starting.remove((actor, ref))
                self.actors.append(actor)

    def start(self) -> None:
        for _ in range(self.cfg.dist.sandbox_workers):
            self._add()
        self.ray.wait([ref for _, ref in self.starting], num_returns=len(self.starting), timeout=600)
        self.poll()
        self.thread = threading.Thread(target=self._run, name="rlvr-sandbox-scaler", daemon=True)
        self.thread.start()

    def close(self) -> None:
        """Stop polling, and wait for a poll under way: Ray must not be called after it shuts
        down (its core worker then ends the whole process with status 1)."""
        self.stop.set()
        thread = getattr(self, "thread", None)
        if thread is not None:
            thread.join(timeout=60)

    def _publish(self, urls: list[str]) -> None:
        import json

        self.client.set(sandboxes_key(self.stream), json.dumps(urls))

    def poll(self) -> None:
        """Addresses and loads of every server; the list and the fleet's load published."""
        import json

        from rlvr.dist.sandbox_scaler import fleet_load

        ray = self.ray
        self._started()
        loads: dict[str, dict[str, Any]] = {}
        for actor in list(self.actors):
            try:
                if self.stop.is_set():
                    return
                url, load = ray.get(actor.load.remote(), timeout=20)
            except Exception as e:  # noqa: BLE001 - down (Ray restarts it); the others still serve
                print(f"sandbox worker not answering: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                continue
            loads[url] = load
        self._publish(sorted(loads))
        fleet = fleet_load(self.last, loads)
        self.last = loads
        self.client.set(sandbox_load_key(self.stream), json.dumps(fleet.as_metrics()))
        if self.stop.is_set():
            return
        change = self.policy.decide(fleet) if not self.starting else 0  # one change at a time
        if change > 0:
            print(f"sandbox pool: {fleet.workers} -> {fleet.workers + 1} servers", file=sys.stderr, flush=True)
            self._add()
        elif change < 0 and len(self.actors) > 1:
            self._drain(self.actors[-1], len(self.actors))

    def _drain(self, actor: Any, n: int) -> None:
        """Off the list first, then killed once it has nothing in flight (or after 2 min)."""
        ray = self.ray
        self.actors.remove(actor)
        url, _ = ray.get(actor.load.remote(), timeout=60)
        self._publish(sorted(u for u in self.last if u != url))
        print(f"sandbox pool: {n} -> {n - 1} servers", file=sys.stderr, flush=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not self.stop.is_set():
            time.sleep(SandboxFleet.REFRESH_S)
            if ray.get(actor.load.remote(), timeout=60)[1]["active"] == 0:
                break
        ray.kill(actor)

    def _run(self) -> None:
        while not self.stop.wait(self.cfg.dist.sandbox_scale_period_s):
            try:
                self.poll()
            except Exception as e:  # noqa: BLE001 - the next poll tries again
                print(f"sandbox pool: poll failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)


def _keep_running(server: Any, stop: threading.Event) -> None:
    """The queue's redis-server, started again (same port and files) if it dies."""
    while not stop.wait(0.5):
        if not server.alive() and not stop.is_set():
            print(f"queue: redis-server exited; starting it again on {server.url}", file=sys.stderr, flush=True)
            try:
                server.start()
            except Exception as e:  # noqa: BLE001 - tried again in half a second
                print(f"queue: could not start redis-server again: {e}", file=sys.stderr, flush=True)
