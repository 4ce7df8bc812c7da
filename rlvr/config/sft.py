"""The `sft` and `rft` sections: the supervised stage before RL (`rlvr sft`) and
rejection-sampling fine-tuning (`rlvr rft`), which fine-tunes with the `sft` settings on
the policy's own rewarded samples.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from rlvr.config.base import _Section


class SftConfig(_Section):
    data: list[str] = Field(default_factory=list)
    """Where the examples come from, each one of: a chat file (JSONL, or Parquet with a
    `messages` column of {role, content} turns; tool_calls and a `tools` column are passed
    to the chat template), a local `datasets` directory (save_to_disk) with such a column,
    an `rlvr export --format sft` file (the same shape), or `tasks`: the run's training
    tasks (tasks.sources, split as for rlvr train), each task's reference rendered as the
    reply its environment checks, through the task's own prompt."""
    epochs: int = Field(1, ge=1)
    """Passes over the training examples (each in a new order drawn from the seed)."""
    max_steps: int | None = Field(None, ge=1)
    """Stop after this many optimizer steps, whatever epochs says (null: epochs decide)."""
    batch_size: int = Field(8, ge=1)
    """Examples per optimizer step."""
    micro_batch_size: int = Field(4, ge=1)
    """Examples per forward/backward pass; gradients accumulate to the whole batch, and
    the loss is the mean over the batch's trained tokens, so the update does not depend
    on this."""
    lr: float = Field(1e-5, gt=0.0)
    """AdamW learning rate (at its peak, after the warm-up)."""
    schedule: Literal["constant", "cosine", "linear"] = "constant"
    """The learning rate after the warm-up: constant, or decaying to 0 at the last step
    (cosine, linear)."""
    warmup_steps: int = Field(0, ge=0)
    """Linear learning-rate warm-up in optimizer steps."""
    weight_decay: float = Field(0.0, ge=0.0)
    """AdamW weight decay."""
    max_grad_norm: float = Field(1.0, gt=0.0)
    """Gradient norm clip."""
    max_length: int = Field(2048, ge=16)
    """Most tokens in one example (prompt and replies); a longer one is left out and
    counted (never cut: a cut reply would teach a reply that does not end)."""
    held_out: float = Field(0.05, ge=0.0, lt=1.0)
    """Share of the examples kept out of training to measure the loss on (at least one
    example when above 0 and there are two or more), chosen by a hash of the example so
    the split does not move when examples are added."""
    eval_every: int = Field(0, ge=0)
    """Held-out loss every N optimizer steps as well as before and after (0: before and
    after only)."""
    check_references: bool = True
    """`tasks` data: run each rendered reference through its environment first and leave
    out (and count) those that do not earn the full reward, so SFT never teaches a reply
    the reward would refuse."""
    checkpoint_every: int = Field(0, ge=0)
    """Save a checkpoint every N optimizer steps (0: only at the end)."""
    keep_checkpoints: int = Field(2, ge=1)
    """How many recent checkpoints to keep."""
    threads: int | None = Field(None, ge=1)
    """torch intra-op threads; default: all cores."""

    @field_validator("data")
    @classmethod
    def _some_data(cls, v: list[str]) -> list[str]:
        if any(not s.strip() for s in v):
            raise ValueError("an empty data source: name a file, a directory, or 'tasks'")
        return v


class RftConfig(_Section):
    rounds: int = Field(2, ge=1)
    """Rounds of sample, keep, fine-tune."""
    samples: int = Field(4, ge=1)
    """Completions sampled per training task each round (at generation.temperature)."""
    tasks_per_round: int | None = Field(None, ge=1)
    """Training tasks sampled each round (drawn from the seed and the round); null: all."""
    min_reward: float = 1.0
    """A sample is kept when its total reward is at least this (and no hack was flagged)."""
    per_task: int = Field(1, ge=1)
    """Most samples kept per task each round (the highest rewards, then the shortest), so
    that easy tasks do not dominate the fine-tuning set."""
    accumulate: bool = False
    """Fine-tune each round on every round's kept samples so far (true), or on this
    round's only (false)."""
