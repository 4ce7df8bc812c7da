"""The `tasks` and `prompt` sections: the task source and split, the prompt around each task.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from rlvr.config.base import _Section, yaml_off


class TasksConfig(_Section):
    source: str = "bundled:python_functions"
    """Task set: 'bundled:NAME' for a set shipped with rlvr, or a path to a JSONL file
    (parts joined by '+'); 'none' when domain records (domains: [...]) give every task."""
    min_difficulty: int = Field(1, ge=1)
    """Lowest difficulty level to use (1 = easiest)."""
    max_difficulty: int = Field(3, ge=1)
    """Highest difficulty level to use."""
    eval_fraction: float = Field(0.2, gt=0.0, lt=1.0)
    """Share of tasks held out for evaluation; the split is a deterministic hash of each
    task id, so it is the same on every machine and across runs."""

    check: Literal["sample", "all", "off"] = "sample"
    """The task check before training (docs/tasks.md): a task's reference must earn full
    completion, a reply doing nothing at most 0, and generic exploits (exiting before the
    tests, an always-equal object, a table of the visible cases, answer spraying) no more
    than a wrong answer; a task that fails is quarantined (left out of training and
    evaluation), and a domain with more than half its checked tasks quarantined stops the
    run. 'all' checks every task; 'sample' up to tasks.check_sample of each domain, drawn
    by task id (a broken set shows in them, at a fraction of the cost); 'off' none.
    Verdicts are cached by content under $RLVR_CACHE_DIR (default ~/.cache/rlvr)."""
    check_sample: int = Field(16, ge=1)
    """tasks.check 'sample': how many tasks of each domain are checked."""
    allow_quarantine: bool = False
    """Train on the tasks that pass even when more than half of a domain's checked tasks
    are quarantined (the run otherwise stops with the first reason)."""

    _yaml_off = field_validator("check", mode="before")(yaml_off)

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
