"""`RunConfig`: every section, and the rules that span sections (engine defaults, what Ray needs, no inert settings).

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationInfo, model_validator

from rlvr.algos.names import estimator_needs
from rlvr.config.algo import AlgoConfig
from rlvr.config.base import ConfigError, _Section
from rlvr.config.curriculum import CurriculumConfig
from rlvr.config.dist import DistConfig, QueueConfig, StorageConfig
from rlvr.config.domains import DomainConfig, fold_domains
from rlvr.config.engine import EngineConfig
from rlvr.config.generation import GenerationConfig
from rlvr.config.model import ModelConfig
from rlvr.config.observe import AlertsConfig, LogConfig, TraceConfig
from rlvr.config.reward import RewardConfig
from rlvr.config.rm import RmConfig
from rlvr.config.sandbox import SandboxConfig
from rlvr.config.sft import RftConfig, SftConfig
from rlvr.config.tasks import PromptConfig, TasksConfig
from rlvr.config.train import BufferConfig, EvalConfig, RolloutConfig, TrainConfig


class RunConfig(_Section):
    name: str = "run"
    """Run name; the run directory is <output_dir>/<name>."""
    output_dir: str = "runs"
    """Where run directories are created."""
    seed: int = 0
    """Seed for task sampling, generation and initialisation."""
    stages: list[Literal["sft", "rft", "rl"]] = Field(default_factory=list)
    """`rlvr train` runs these stages in order, each in <run>/<stage> and each starting from
    the model the one before it wrote (e.g. [sft, rl]: a supervised warm start on sft.data,
    then RL); each is resumable, and a finished stage is not run again on --resume. rl,
    when named, comes last. Empty: RL alone, in <run> (what rlvr train does without it)."""
    plugins: list[str] = Field(default_factory=list)
    """Python modules imported before the run (dotted names on the path, or .py files):
    where your own environments register their domains and reward code lives."""
    model: ModelConfig = Field(default_factory=ModelConfig)
    tasks: TasksConfig = Field(default_factory=TasksConfig)
    domains: list[DomainConfig] = Field(default_factory=list)
    """Domain records: domains added over registered environments by configuration, each
    with its task source, difficulty range, system message, reward terms, mix weight and
    evaluation share (rlvr.config.domains; docs/tasks.md). Their tasks join tasks.source's
    (which may be 'none' when the records give every task)."""
    curriculum: CurriculumConfig = Field(default_factory=CurriculumConfig)
    prompt: PromptConfig = Field(default_factory=PromptConfig)
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    algo: AlgoConfig = Field(default_factory=AlgoConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    queue: QueueConfig = Field(default_factory=QueueConfig)
    dist: DistConfig = Field(default_factory=DistConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    buffer: BufferConfig = Field(default_factory=BufferConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    trace: TraceConfig = Field(default_factory=TraceConfig)
    log: LogConfig = Field(default_factory=LogConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    sft: SftConfig = Field(default_factory=SftConfig)
    rft: RftConfig = Field(default_factory=RftConfig)
    rm: RmConfig = Field(default_factory=RmConfig)

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.name

    @model_validator(mode="after")
    def _engine_defaults(self) -> RunConfig:
        """vLLM samples with its own kernels, so its behaviour log-probs differ slightly from
        the learner's: truncated importance sampling is on by default with it (token level,
        at algo.is_cap) unless algo.importance is set; its weight loader takes full
        weights, not LoRA adapters. The same holds for a reloading vLLM server
        (engine.kind openai, engine.openai.reload vllm)."""
        reloading = self.engine.kind == "openai" and self.engine.openai.reload != "none"
        if self.engine.kind == "vllm" or reloading:
            if self.model.lora is not None:
                what = "engine.kind vllm" if self.engine.kind == "vllm" else "engine.openai.reload vllm"
                raise ValueError(f"{what} loads full weights after each update: model.lora is not supported")
            if "importance" not in self.algo.model_fields_set:
                self.algo.importance = "token"
        return self

    @model_validator(mode="after")
    def _ray_needs(self) -> RunConfig:
        """On Ray, batches cross processes: through Redis (chosen when queue.backend is not
        set). Refill rounds would need the learner's sampler inside a worker's step."""
        if self.dist.backend != "ray":
            if self.queue.backend == "memory" and (self.queue.url or self.queue.stream):
                raise ValueError("queue.url and queue.stream apply to queue.backend redis; set queue.backend=redis")
            return self
        if self.queue.backend != "redis":
            if "backend" in self.queue.model_fields_set:
                raise ValueError(
                    "dist.backend ray moves batches between processes: queue.backend must be redis (or left unset)"
                )
            self.queue.backend = "redis"
        if self.dist.address and not self.queue.url:
            raise ValueError(
                "dist.address joins a cluster: set queue.url to a Redis every node can reach (the run's own "
                "redis-server listens on this machine's loopback only)"
            )
        d = self.dist
        if d.sandbox_max_workers is not None and d.sandbox_workers < 1:
            raise ValueError(
                "dist.sandbox_max_workers makes the sandbox pool elastic: set dist.sandbox_workers (its floor) "
                "to 1 or more"
            )
        if d.sandbox_max_workers is not None and d.sandbox_max_workers < d.sandbox_workers:
            raise ValueError(
                f"dist.sandbox_max_workers ({d.sandbox_max_workers}) is below dist.sandbox_workers "
                f"({d.sandbox_workers}), the pool's floor"
            )
        if d.colocate_sandbox and (d.rollout_cpus <= 0 or d.sandbox_cpus <= 0):
            raise ValueError(
                "dist.colocate_sandbox packs each rollout worker with its sandbox worker by the CPUs they ask for: "
                "dist.rollout_cpus and dist.sandbox_cpus must be above 0"
            )
        if self.algo.dynamic_sampling == "refill":
            raise ValueError(
                "dist.backend ray: algo.dynamic_sampling 'refill' is not supported yet (a worker cannot draw more "
                "tasks mid-step); use 'filter', or rollout.mode async with more prompts_per_step"
            )
        if self.engine.kind == "openai":
            raise ValueError("dist.backend ray runs engine.kind hf or vllm in its rollout workers, not openai")
        return self

    @model_validator(mode="after")
    def _domain_records(self) -> RunConfig:
        """Each record's system message, terms and weight folded into their sections."""
        fold_domains(self.domains, self.prompt, self.reward, self.curriculum)
        if self.tasks.source == "none" and not self.domains:
            raise ValueError("tasks.source: 'none' leaves no tasks without domain records (domains: [...])")
        return self

    @model_validator(mode="after")
    def _stages(self) -> RunConfig:
        """Stages name each stage once, rl last; an sft stage needs its data."""
        st = self.stages
        if len(set(st)) != len(st):
            raise ValueError(f"stages: each stage once, got {st}")
        if "rl" in st and st[-1] != "rl":
            raise ValueError(f"stages: rl writes checkpoints, not a model directory, so it comes last (got {st})")
        if "sft" in st and not self.sft.data:
            raise ValueError("stages: an sft stage needs sft.data (a chat file, a datasets directory, or 'tasks')")
        return self

    @model_validator(mode="after")
    def _no_inert_settings(self, info: ValidationInfo) -> RunConfig:
        """A key set in the file or on the command line that the chosen path never reads
        is an error saying why (a typo in intent, like a typo in a name, should not pass).
        Not for a run's own resolved config.yaml, which lists every key."""
        if info.context and info.context.get("resolved"):
            return self
        a, r = self.algo, self.rollout
        inert = [
            (a, ("gamma", "lam", "value_coef", "value_clip"), not estimator_needs(a.advantage).values,
             f"used only with an advantage estimator that has a value head (e.g. 'gae'); here it is "
             f"'{a.advantage}'"),
            (a, ("is_cap",), a.importance == "none", "used only with algo.importance 'token' or 'sequence'"),
            (a, ("kl_estimator", "kl_in"), a.kl_coef == 0, "used only when algo.kl_coef > 0"),
            (a, ("max_refill_rounds",), a.dynamic_sampling != "refill",
             "used only with algo.dynamic_sampling 'refill'"),
            (r, ("max_staleness",), r.mode == "sync", "used only with rollout.mode 'async'"),
            (self.dist, ("address", "rollout_workers", "rollout_cpus", "rollout_gpus", "learner_cpus", "learner_gpus",
                         "sandbox_workers", "sandbox_cpus", "weights_uri", "produce_timeout_s",
                         "heartbeat_timeout_s", "sandbox_max_workers", "sandbox_scale_period_s",
                         "sandbox_concurrency", "colocate_sandbox"),
             self.dist.backend != "ray", "used only with dist.backend 'ray'"),
            (r, ("max_context_tokens", "feedback_chars"), r.max_turns == 1,
             "used only for multi-turn episodes (rollout.max_turns > 1)"),
            (self.sandbox, ("token_env",), self.sandbox.url is None, "used only with a remote sandbox.url"),
            (a, ("compact_filter",), r.max_turns == 1, "used only for multi-turn episodes (rollout.max_turns > 1)"),
        ]  # fmt: skip
        problems = []
        for section, names, unused, why in inert:
            prefix = next(k for k, v in self if v is section)
            problems += [f"{prefix}.{n}: set, but {why}" for n in names if n in section.model_fields_set and unused]
        if problems:
            raise ValueError("\n".join(problems))
        return self


_RL_ONLY = ("algo", "train", "buffer", "queue", "dist", "storage", "curriculum")
NOT_READ: dict[str, tuple[str, ...]] = {
    "train": ("sft", "rft", "rm"),
    "eval": ("sft", "rft", "rm"),
    "sft": (*_RL_ONLY, "rft", "rm"),
    "rft": (*_RL_ONLY, "rm"),
    "rm": (*_RL_ONLY, "sft", "rft", "tasks", "prompt", "generation", "rollout", "sandbox", "reward", "eval", "engine"),
}
"""The sections each command never reads (`rlvr sft` has its own learning rate, batch and
checkpoint keys under sft; RL's are under train)."""

_READ_BY = {"sft": "rlvr sft and rlvr rft", "rft": "rlvr rft", "storage": "rlvr train", "rm": "rlvr rm train"}


def unread_keys(cfg: RunConfig, command: str) -> list[str]:
    """The keys set (in the file or on the line) in sections `command` never reads, each
    with why: one message line per key."""
    problems = []
    for section in NOT_READ.get(command, ()):
        if command == "train" and (section in cfg.stages or (section == "sft" and "rft" in cfg.stages)):
            continue  # rlvr train runs that stage (stages: [...]); rft fine-tunes with the sft settings
        for key in sorted(getattr(cfg, section).model_fields_set):
            by = _READ_BY.get(section, "rlvr train")
            hint = f" (rlvr {command} reads sft.{key})" if section == "train" and key in SftConfig.model_fields else ""
            problems.append(f"{section}.{key}: set, but read only by {by}, not rlvr {command}{hint}")
    return problems


def check_command_keys(cfg: RunConfig, command: str, overrides: list[str] | None = None) -> None:
    """A key given for a section the command never reads is an error naming it (a
    learning rate given as train.lr to rlvr sft would otherwise do nothing). With
    `overrides`, only the keys on the command line count: one config file may serve
    several stages (rlvr sft, then rlvr train with the same file)."""
    problems = unread_keys(cfg, command)
    if overrides is not None:
        given = {o.split("=", 1)[0].strip() for o in overrides}
        named = lambda p: p.split(":")[0]  # noqa: E731
        problems = [p for p in problems if any(g == named(p) or g.startswith(named(p) + ".") for g in given)]
    if problems:
        raise ConfigError("\n".join(problems))
