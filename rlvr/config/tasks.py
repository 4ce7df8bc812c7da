"""The `tasks` and `prompt` sections: the task source and split, the prompt around each task.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from pydantic import Field, model_validator

from rlvr.config.base import _Section


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
