"""The `train`, `rollout`, `buffer` and `eval` sections: the learner's schedule, how
episodes run, the experience buffer, evaluation.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rlvr.config.base import _Section


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
    sparse_embedding_grads: bool = False
    """With the input embedding tied to the output head, send the embedding's share of the
    gradient as a sparse update of the rows a micro-batch's tokens touch instead of a dense
    vocabulary x hidden one (rlvr.learner.embedding_grad; about a tenth of the update at
    micro-batch 2 for SmolLM2-135M on a 2-core CPU). The same gradient up to the order of
    additions, so a seed's run differs from the default's. Off by default: the README's
    seed table is of the dense path. Not used by the FSDP learner."""
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
