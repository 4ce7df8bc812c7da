"""The `rm` section: training a reward model on feedback (`rlvr rm train`).

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text. The backbone is
`model.name_or_path` (LoRA settings: `model.lora`); the model is written to
<run>/reward_model."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from rlvr.config.base import _Section


class RmConfig(_Section):
    feedback: list[str] = Field(default_factory=list)
    """Where the feedback comes from, each one of: a feedback store (a directory or URL
    made by `rlvr feedback import`) or a feedback file (.jsonl, docs/feedback.md's
    schema). Preferences and edits are pairs (Bradley-Terry loss); ratings, thumbs,
    accepted and rejected records are points with a 0..1 label (pointwise loss)."""
    mode: Literal["full", "frozen", "lora"] = "full"
    """What trains: every weight (full), the scalar head alone on a frozen backbone
    (frozen: fast, weaker), or LoRA adapters plus the head (lora: model.lora's settings,
    r 16 and alpha 32 when it is not set)."""
    epochs: int = Field(1, ge=1)
    """Passes over the training examples (each in a new order drawn from the seed)."""
    max_steps: int | None = Field(None, ge=1)
    """Stop after this many optimizer steps, whatever epochs says (null: epochs decide)."""
    batch_size: int = Field(16, ge=1)
    """Examples (pairs or points) per optimizer step."""
    micro_batch_size: int = Field(8, ge=1)
    """Examples per forward/backward pass (a pair is two sequences); gradients accumulate
    to the whole batch, so the update does not depend on this."""
    lr: float = Field(1e-5, gt=0.0)
    """AdamW learning rate for the backbone or its adapters (at its peak, after the warm-up)."""
    head_lr: float | None = Field(None, gt=0.0)
    """The scalar head's learning rate (null: lr). A new head usually wants more than the
    backbone it sits on; with mode frozen it is the only one that matters."""
    schedule: Literal["constant", "cosine", "linear"] = "constant"
    """The learning rate after the warm-up: constant, or decaying to 0 at the last step."""
    warmup_steps: int = Field(0, ge=0)
    """Linear learning-rate warm-up in optimizer steps."""
    weight_decay: float = Field(0.0, ge=0.0)
    """AdamW weight decay."""
    max_grad_norm: float = Field(1.0, gt=0.0)
    """Gradient norm clip."""
    max_length: int = Field(1024, ge=16)
    """Most tokens in one conversation (prompt and reply); a longer example is left out
    and counted, never cut."""
    held_out: float = Field(0.1, ge=0.0, lt=1.0)
    """Share of the groups (split_by) kept out of training to measure accuracy on."""
    split_by: Literal["task", "family", "conversation", "prompt"] = "task"
    """What a held-out group is: records of one task (or family, or conversation) stay on
    one side of the split; a record without that key is grouped by its prompt."""
    rating_weight: float = Field(1.0, ge=0.0)
    """Weight of the pointwise loss (binary cross-entropy of sigmoid(score) against the
    label) beside the pairwise one."""
    center: float = Field(0.0, ge=0.0)
    """Weight of a penalty on each pair's summed score, squared (TRL's
    center_rewards_coefficient): keeps scores centred on 0 without changing which reply
    is preferred."""
    eval_every: int = Field(0, ge=0)
    """Held-out figures every N optimizer steps as well as before and after (0: before
    and after each epoch)."""
    patience: int = Field(0, ge=0)
    """Early stopping: stop after this many evaluations without a better held-out loss,
    and keep the best evaluated weights (0: train to the end, keep the last)."""
    threads: int | None = Field(None, ge=1)
    """torch intra-op threads; default: all cores."""

    @field_validator("feedback")
    @classmethod
    def _named(cls, v: list[str]) -> list[str]:
        if any(not s.strip() for s in v):
            raise ValueError("an empty feedback source: name a store or a .jsonl file")
        return v
