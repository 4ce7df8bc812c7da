"""The run config's operational sections: where submissions run (sandbox), what generates
rollouts (engine), how batches reach the learner (queue), and what a run records and reports (trace, log, alerts).

Part of the run configuration (`rlvr.config` re-exports every class here); each field's
docstring is its documentation and `rlvr train --help` text, as everywhere in the config.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from rlvr.config.base import _Section

__all__ = [
    "AlertRuleConfig",
    "AlertsConfig",
    "DistConfig",
    "EngineConfig",
    "LogConfig",
    "QueueConfig",
    "SandboxConfig",
    "StorageConfig",
    "TraceConfig",
]


class SandboxConfig(_Section):
    timeout_s: float = Field(5.0, gt=0.0)
    """Wall-clock limit for running one submission against its tests."""
    memory_mb: int = Field(512, ge=32)
    """Memory limit of each test's process, in MiB (the run's cgroup holds memory_mb per
    test running at once)."""
    parallel_tests: int = Field(2, ge=1)
    """Test processes of one submission running side by side (assert and call formats).
    With test_isolation 'process' each test has its own fork of the loaded code; with
    'shared' a second process starts only beside a test that runs long; 1: one at a time."""
    test_isolation: Literal["shared", "process"] = "shared"
    """How the tests of one submission are kept apart (assert and call formats). 'shared':
    one after another in one fork of the loaded code, as HumanEval's own harness runs them
    (a test can see state left by an earlier test of the same run; a crash, timeout or
    broken process costs that test only: the rest go on in a fresh fork); 'process': each
    in its own fork (nothing carries from test to test; about 1 ms more CPU per test). In
    both, expected values never enter the sandbox."""
    cpus: float | None = Field(None, ge=0.01)
    """Cores one submission's processes together may use (a CPU-bandwidth quota on its
    cgroup), e.g. 1.0; null: no cap but the wall clock. Not enforced where the machine has
    no CPU controller (`rlvr sandbox check` says so)."""
    workers: int = Field(4, ge=1)
    """Submissions executed concurrently."""
    url: str | None = None
    """A remote sandbox server (`rlvr sandbox serve`), e.g. http://10.0.0.5:8080; null runs
    submissions in this machine's own sandbox pool."""
    token_env: str = "RLVR_SANDBOX_TOKEN"
    """Environment variable holding the remote server's bearer token (only with url)."""


class TraceConfig(_Section):
    uri: str | None = None
    """Where the Parquet trace store goes (every trajectory and every step's metrics, one
    part file per step; docs/traces.md): a local path or an fsspec URL such as
    s3://bucket/run (needs s3fs); null: <run directory>/traces."""


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


class EngineConfig(_Section):
    kind: Literal["hf", "vllm", "openai"] = "hf"
    """What generates rollouts and evaluations (docs/engines.md): hf (transformers, in
    process, the default), vllm (in-process vLLM, needs rlvr[vllm] and a GPU), openai (any
    server speaking the OpenAI completions API with token ids and log-probs)."""
    base_url: str | None = None
    """openai: the server's base URL, e.g. http://127.0.0.1:8000/v1."""
    served_model: str | None = None
    """openai: the model name the server knows; null: model.name_or_path."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai: environment variable holding the API key (unset: no key sent)."""
    concurrency: int = Field(8, ge=1)
    """openai: requests in flight at once."""
    timeout_s: float = Field(120.0, gt=0)
    """openai: seconds a request may take before it is retried."""
    max_retries: int = Field(2, ge=0)
    """openai: retries of a request that failed to connect, timed out or got a 5xx."""
    reload: Literal["none", "vllm"] = "none"
    """openai: how the server adopts each new policy version when training: none (it
    cannot: evaluation of a served model only), vllm (a vLLM server started with
    VLLM_SERVER_DEV_MODE=1: each version is written to engine.weights_uri and the server
    reloads it in place through POST /collective_rpc reload_weights, then resets its prefix
    cache; docs/engines.md)."""
    weights_uri: str | None = None
    """openai with reload vllm: where each policy version is written (safetensors, one
    directory per version, older ones removed): a path or an fsspec URL (s3://...) that
    the server can read as engine.server_weights_path; null: <run directory>/weights."""
    server_weights_path: str | None = None
    """openai with reload vllm: engine.weights_uri as the server sees it (a shared mount
    elsewhere on its machine); null: engine.weights_uri itself."""
    gpu_memory_utilization: float = Field(0.4, gt=0, le=1)
    """vllm: share of the GPU's memory vLLM may take (the learner needs the rest)."""

    @model_validator(mode="after")
    def _needs_url(self) -> EngineConfig:
        if self.kind == "openai" and not self.base_url:
            raise ValueError("engine.kind openai needs engine.base_url (the server, e.g. http://127.0.0.1:8000/v1)")
        return self


class AlertRuleConfig(_Section):
    action: Literal["off", "warn", "checkpoint", "stop"] | None = None
    """off, warn (store, console, sinks, webhook), checkpoint (also save a checkpoint now),
    stop (save a checkpoint and end the run with exit code 4 and the reason); null: the rule's default."""
    threshold: float | None = None
    """The level the rule fires at (docs/alerts.md has each rule's default and unit); null: the default."""

    @field_validator("action", mode="before")
    @classmethod
    def _yaml_off(cls, v: Any) -> Any:
        return "off" if v is False else v  # YAML reads a bare `off` as false


class AlertsConfig(_Section):
    enabled: bool = True
    """Evaluate the alert rules after every step (docs/alerts.md)."""
    window: int = Field(5, ge=2)
    """Steps each rule looks back over (window means; the baseline median of relative rules)."""
    webhook: str | None = None
    """URL that each alert is POSTed to as JSON (e.g. a chat or paging hook); null: none."""
    webhook_timeout_s: float = Field(5.0, gt=0)
    """A webhook that does not answer in time is reported once on the console; training goes on."""
    rules: dict[str, AlertRuleConfig] = Field(default_factory=dict)
    """Per-rule settings by name, e.g. {hack_rate: {action: stop, threshold: 0.2}} (the
    rules are the monitor's, rlvr.trace.alerts.RULES; an unknown name is refused when the
    run starts, with the valid names)."""


class LogConfig(_Section):
    sinks: list[Literal["tensorboard", "wandb", "mlflow"]] = Field(default_factory=lambda: ["tensorboard"])  # type: ignore[arg-type]
    """Where every step's metrics go besides metrics.jsonl and the trace store (always
    written): tensorboard (event files under <run>/tensorboard), wandb (needs rlvr[wandb];
    offline by default, under <run>/wandb), mlflow (needs rlvr[mlflow]). Names are the
    same everywhere: reward/..., domain/<d>/..., hack/..., train/..., time/..., sandbox/..."""
    wandb_project: str = "rlvr"
    """Weights & Biases project name."""
    wandb_mode: Literal["offline", "online"] = "offline"
    """offline: written under <run>/wandb, uploaded later with `wandb sync` (no network)."""
    mlflow_tracking_uri: str | None = None
    """MLflow tracking URI (a server or a database URL); null: a local store under <run>/mlflow."""
    mlflow_experiment: str = "rlvr"
    """MLflow experiment name."""
