"""The Ray runner's sandbox side: sandbox worker actors (each runs `rlvr sandbox serve`
on its node), the rollout workers' way to them (`SandboxFleet`, addresses read from
Redis), and the driver's elastic pool (`SandboxAutoscaler`, whose arithmetic is
rlvr.dist.sandbox_scaler). rlvr.dist.ray_runner places these actors and wires them in.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from typing import Any

from rlvr.config import ConfigError, RunConfig


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:  # pragma: no cover - installed by make test
        raise ConfigError("dist.backend ray needs Ray: pip install 'rlvr[dist]'") from e
    return ray


def sandboxes_key(stream: str) -> str:
    """The sandbox servers' addresses (a JSON list), kept by the driver."""
    return f"{stream}:sandboxes"


def sandbox_load_key(stream: str) -> str:
    """The sandbox fleet's load (JSON, FleetLoad.as_metrics), written by the driver."""
    return f"{stream}:sandbox-load"


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
        from rlvr.pipeline.redis_server import _die_with_parent

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
    new address) before a second round. With `local` (the sandbox worker placed beside
    this rollout worker, dist.colocate_sandbox), every request goes there first and the
    shared servers are the fallback. The verdict is the server's, as with one sandbox:
    requests carry no state between tries."""

    REFRESH_S = 2.0

    def __init__(self, client: Any, key: str, token: str | None, first: int = 0, local: Any = None) -> None:
        self.client, self.key, self.token = client, key, token
        self.local = local  # a SandboxWorkerRole actor handle, or None
        self.local_url = ""
        self.local_runs = 0  # requests the local server answered (logged as rollout/sandbox_local_share)
        self.runs = 0
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
                raw = self.client.get(self.key) if self.key else None
                self.urls = json.loads(raw) if raw else []
                self.read_at = time.monotonic()
            return list(self.urls)

    def _local_address(self, force: bool = False) -> str | None:
        """The co-located server's address (asked of its actor, which starts the server
        again if it died), or None without one or when its actor cannot answer."""
        if self.local is None:
            return None
        if force or not self.local_url:
            try:
                self.local_url = str(_ray().get(self.local.address.remote(), timeout=60))
            except Exception:  # its actor is restarting: the shared servers meanwhile
                return None
        return self.local_url

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
            self.runs += 1
        last: BaseException | None = None
        for attempt in range(3):
            local = self._local_address(force=attempt > 0)
            if local is not None:
                try:
                    result = self._client(local).run(code, tests, limits, language)
                    with self.lock:
                        self.local_runs += 1
                    return result
                except SandboxError as e:
                    last = e
                    self.failovers += 1
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
            .remote(
                self.cfg.dist.sandbox_concurrency or self.cfg.sandbox.workers, self.token, self.cfg.sandbox.token_env
            )
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
            except Exception as e:
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
            except Exception as e:
                print(f"sandbox pool: poll failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
