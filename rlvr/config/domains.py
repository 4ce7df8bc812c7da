"""The `domains` section: domain records, each a domain added over a registered
environment by configuration alone (docs/tasks.md, "Domain records").

A record names the domain (`ENV/NAME`: it runs in environment ENV), where its tasks come
from and their difficulty range, and what the run does differently for it: its system
message, its own reward terms, its weight in a fixed or bandit mix and how many of its
held-out tasks are evaluated. The run config folds the record's prompt, reward and
curriculum settings into those sections when it is read (`fold_domains`), so every part
of rlvr that reads them sees the record without knowing records exist; the folding is
idempotent, so a run's saved config.yaml reads back to the same run.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

import re

from pydantic import Field, field_validator, model_validator

from rlvr.config.base import _Section
from rlvr.config.curriculum import CurriculumConfig
from rlvr.config.reward import RewardConfig, TermConfig
from rlvr.config.tasks import PromptConfig

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)?$")


class DomainConfig(_Section):
    name: str
    """The domain's name, `ENV/NAME` (e.g. python/easy): it runs in the registered
    environment ENV and is a domain of its own everywhere else (metrics, the curriculum's
    mix, the task check's quarantine rule). A bare ENV names the environment's own domain."""
    env: str | None = None
    """The environment it runs in; when given it must be the name's ENV part (a check that
    the record means the environment it names)."""
    source: str
    """Where the tasks come from: anything tasks.source takes ('bundled:NAME', a JSONL
    file, reasoning_gym:NAMES[:SIZE[:SEED]], parts joined by '+'). Its tasks become this
    domain's, with their ids kept (so the held-out split is the source's own); a task may
    belong to one domain only, so a source also named in tasks.source is an error."""
    min_difficulty: int | None = Field(None, ge=1)
    """Lowest difficulty taken from the source; null: tasks.min_difficulty."""
    max_difficulty: int | None = Field(None, ge=1)
    """Highest difficulty taken from the source; null: tasks.max_difficulty."""
    system: str | None = None
    """The domain's system message (folded into prompt.system_by_domain); null: the
    prompt section's."""
    terms: list[TermConfig] = Field(default_factory=list)
    """Reward terms paid on this domain only, on top of reward.terms (folded into
    reward.terms with domains: [NAME]), e.g. [{name: format, weight: 0.1}]."""
    weight: float | None = Field(None, gt=0.0)
    """The domain's draw weight under curriculum.domain_mix 'fixed' (and the bandit's
    starting weight), folded into curriculum.domain_weights; null: 1.0."""
    eval_tasks: int | None = Field(None, ge=0)
    """At most this many of the domain's held-out tasks are evaluated (within
    eval.num_tasks); null: its turn in eval.num_tasks like any domain's."""

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"'{v}' is not a domain name: ENV or ENV/NAME, letters, digits, '_', '.', '-'")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> DomainConfig:
        if self.env is not None and self.name.split("/", 1)[0] != self.env:
            raise ValueError(f"name '{self.name}' does not run in env '{self.env}': name it {self.env}/<name>")
        lo, hi = self.min_difficulty, self.max_difficulty
        if lo is not None and hi is not None and lo > hi:
            raise ValueError(f"min_difficulty ({lo}) is above max_difficulty ({hi})")
        for i, t in enumerate(self.terms):
            if t.domains not in (None, [self.name]):
                raise ValueError(f"terms[{i}].domains: a record's term pays its own domain only (drop domains)")
        return self


def fold_domains(
    domains: list[DomainConfig], prompt: PromptConfig, reward: RewardConfig, curriculum: CurriculumConfig
) -> None:
    """Fold each record's system message, terms and weight into the prompt, reward and
    curriculum sections (in place). Idempotent: a value already there is left alone, a
    different one for the same domain is a ValueError naming both keys."""
    names = [d.name for d in domains]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"domains: {', '.join(twice)} named twice")
    for i, d in enumerate(domains):
        if d.system is not None:
            have = prompt.system_by_domain.get(d.name)
            if have is not None and have != d.system:
                raise ValueError(f"domains[{i}].system: prompt.system_by_domain gives {d.name} another message")
            prompt.system_by_domain[d.name] = d.system
        if d.weight is not None:
            have_w = curriculum.domain_weights.get(d.name)
            if have_w is not None and have_w != d.weight:
                raise ValueError(f"domains[{i}].weight: curriculum.domain_weights gives {d.name} {have_w}")
            curriculum.domain_weights[d.name] = d.weight
        for t in d.terms:
            own = t.model_copy(update={"domains": [d.name]})
            if own not in reward.terms:
                reward.terms.append(own)
