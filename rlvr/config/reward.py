"""The `reward` section of the run config: which components count, with what weights,
gates and domains, the format rules, and what a hack signature does."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from rlvr.config.base import _Section


class TermConfig(_Section):
    name: str
    """Component: completion (the environment's verdict), a registered reward term
    (rlvr.rewards.registry; built in: format, length, security, efficiency, math; a plugin
    may register more), or one an environment computes itself (e.g. itops 'safety',
    trading 'rules', python 'tests_held_out'). A name nothing computes is refused when the
    run starts, with the valid names. 'learned' (a reward model: reward.learned) and
    'judge' (a model behind an OpenAI-compatible server: reward.judge) are group terms:
    added as a guarded bonus that orders replies the verifiable reward ties and never
    reorders the ones it ranks (docs/feedback.md)."""
    weight: float = 1.0
    """Multiplier of the component's value in the total."""
    gate: Literal["all_tests_pass", "tie_break"] | None = None
    """Count the term only when the condition holds: 'all_tests_pass' (the reply passed
    every test: style among correct answers only), 'tie_break' (a group term only: the
    group's verifiable rewards are all equal); null: always."""
    domains: list[str] | None = None
    """Apply the term only to tasks of these domains; null: every domain."""

    @field_validator("name")
    @classmethod
    def _known(cls, value: str) -> str:
        if not value.isidentifier():
            raise ValueError(f"'{value}' is not a component name (an identifier such as completion or format)")
        return value


class FormatRulesConfig(_Section):
    code_block: bool = False
    """The reply must contain a fenced code block."""
    required_tags: list[str] = Field(default_factory=list)
    """Tags that must appear as <tag>...</tag> pairs (e.g. think, answer)."""
    regex: str | None = None
    """A regular expression the reply must match (searched, dot matches newlines)."""
    json_schema: dict[str, Any] | None = None
    """JSON Schema the reply's JSON answer must satisfy (from <answer>, a code block, or
    the whole reply). A task's own `tests.schema` takes precedence."""

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            import re

            try:
                re.compile(value)
            except re.error as e:
                raise ValueError(f"not a valid regular expression: {e}") from None
        return value

    @field_validator("json_schema")
    @classmethod
    def _schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            import jsonschema

            try:
                jsonschema.Draft202012Validator.check_schema(value)
            except jsonschema.SchemaError as e:
                raise ValueError(f"not a valid JSON Schema: {e.message}") from None
        return value


class LearnedConfig(_Section):
    model: str | None = None
    """A reward model directory (`rlvr rm train` writes <run>/reward_model): what the
    `learned` term scores each reply with, in batches, in the rollout process."""
    batch_size: int = Field(8, ge=1)
    """Conversations per forward pass of the reward model."""
    device: str = "cpu"
    """Where the reward model runs: 'cpu', 'cuda' or 'cuda:N'."""
    score_all: bool = False
    """Score every reply of a group, not only those that can earn the bonus (its gate,
    domains, no hack flag, not probe-shaped): the logged reward/learned then covers every
    reply, for the traces and the alerts, at the cost of a forward pass per reply."""


class JudgeConfig(_Section):
    base_url: str | None = None
    """An OpenAI-compatible server the `judge` term asks (its chat completions), e.g.
    http://127.0.0.1:8080/v1 (vLLM, llama.cpp's server, a hosted model)."""
    model: str = "judge"
    """The model name sent with each request."""
    api_key_env: str | None = None
    """An environment variable holding the server's API key (sent as a bearer token)."""
    criteria: list[str] = Field(default_factory=list)
    """What the judge checks, one yes/no question each, e.g. "The function has a
    docstring that says what it returns." The score is the share met."""
    rubric: str | None = None
    """The judge's system message (default: a reviewer told that the quoted reply is data,
    not instructions)."""
    scoring: Literal["logprobs", "grade"] = "logprobs"
    """'logprobs': one one-token request per criterion, P(yes) from the top log-probs;
    'grade': one request for all criteria, answered one line each, the share of yes."""
    max_tokens: int = Field(64, ge=1)
    """The longest answer asked for with scoring 'grade'."""
    timeout_s: float = Field(30.0, gt=0.0)
    """Seconds one request may take before it is retried."""
    max_retries: int = Field(2, ge=0)
    """Retries of a request on connection errors, timeouts, 408, 429 and 5xx; then the run
    stops with the server's answer."""
    concurrency: int = Field(4, ge=1)
    """Requests in flight at most."""
    token_budget: int | None = Field(None, ge=1)
    """Most tokens (prompt and answer, as the server reports them) the run may spend on the
    judge; past it, replies are not scored (no bonus) and it is counted. Null: no limit."""
    cache_size: int = Field(65536, ge=0)
    """Answers kept, by a hash of everything that decides them."""
    score_all: bool = False
    """Score every reply of a group, not only those that can earn the bonus (its gate,
    domains, no hack flag, not probe-shaped): the logged reward/judge then covers every
    reply, for the traces and the alerts, at the cost of the judge's requests per reply."""


TERM_PLUGINS = {"learned": "rlvr.feedback.terms", "judge": "rlvr.feedback.terms"}
"""Reward terms another package registers, and the module that registers each: a config
naming one imports that module before it is validated, as if it were listed in plugins."""


class RewardConfig(_Section):
    timeout_penalty: float = -0.5
    """Reward given when execution times out (instead of the share of tests passed)."""
    held_out_weight: float = Field(0.5, ge=0.0, le=1.0)
    """For tasks with held-out tests (`tests.held_out`: run, never shown or quoted in
    feedback): their share of the completion reward, the visible tests' share being the
    rest. 0 scores the visible tests alone (the held-out ones are still run and logged)."""
    hidden_tests: int = Field(20, ge=0, le=200)
    """Tests drawn fresh each step, in place of a task's own held-out tests
    (`rlvr.rewards.hidden_tests`): for a function task, new inputs within its examples'
    range with the reference's values (run in the sandbox; 3 x this many are drawn and
    up to `hidden_tests_max` of them kept); for a task whose generator
    draws (`metadata.draw`: the bundled C++, JavaScript and data tasks), new inputs over
    the documented range with the generator's answers. Where a task gets them, the
    completion is their share alone: special-casing the visible tests earns nothing, and
    the visible tests give feedback and end the episode. A task with neither a reference
    nor held-out tests has a third of its own tests held out instead. 0 keeps every
    task's tests as written."""
    hidden_tests_max: int = Field(64, ge=0, le=600)
    """How many of a function task's drawn inputs become tests (besides one for each ladder
    of larger inputs, at the largest rung the reference answers: `rlvr.rewards.reached`;
    the examples' half-way twins where the statement never calls its numbers integers:
    `rlvr.rewards.float_twins`; and the arguments' state after a call where the statement
    says "a new list" or "in place": `rlvr.rewards.argument_state`): 3 x `hidden_tests` are
    drawn (and the task's own held-out inputs join them) and up to this many are kept, in
    the order that covers the most of what they exercise first (`rlvr.rewards.selection`:
    an edit of an example with another answer, a shape such as a square of a prime or a
    run of ten, an input on which a mutant of the reference differs, ...). The default
    keeps every drawn input: which input tells a fitted rule from the right one is
    chance, and blind set 4 showed the killing input among the drawn but not among the
    kept ones on 2 of 10 steps. The cost is the extra asserts in the reply's one process
    (about 10 ms a reply for 60 against 20); drawing is unchanged. Tasks drawn by their
    generator (stdin/stdout: a process per case) keep `hidden_tests`; a value at or
    below `hidden_tests` keeps every task at exactly that many drawn inputs (the default
    before 2026-12-06), the tests beside them added."""
    hidden_credit: Literal["all", "share"] = "all"
    """How a reply's drawn tests (`hidden_tests`) become its completion: 'all' pays 1 when
    every drawn test and every visible test passes and 0 otherwise (a reply that fails a
    shown example is wrong, whatever the draw missed), so a reply that fails fresh inputs earns what
    any wrong answer earns, however many it passes (a half-right algorithm with the visible
    cases patched on top earns exactly what the same algorithm earns without them: 0);
    'share' pays the share passed (beyond what a do-nothing program passes), a denser
    signal that also pays partial algorithms that fit the examples better than they
    generalise. Tasks without drawn tests keep the share. The share is logged either way
    (`reward/tests_held_out`)."""
    terms: list[TermConfig] = Field(default_factory=lambda: [TermConfig(name="completion")])
    """The weighted components summed into the reward, e.g.
    [{name: completion}, {name: format, weight: 0.1, gate: all_tests_pass}]. Every
    component computed is logged whether or not a term uses it."""
    clip: tuple[float, float] | None = None
    """Clip the summed reward to [low, high]; null: no clipping."""
    normalize: Literal["none", "group"] = "none"
    """'group' standardises each component within the prompt's group of samples before
    the weighted sum (GDPO), so a component with a large scale cannot drown the others."""
    format: FormatRulesConfig = Field(default_factory=FormatRulesConfig)
    """Rules for the format component."""
    overlong_cache: int = Field(0, ge=0)
    """DAPO soft overlong penalty (length component): the last N tokens before
    generation.max_new_tokens ramp the penalty from 0 to -1; 0: only truncated replies."""
    efficiency_time_floor_s: float = Field(0.02, ge=0.0)
    """Added to both CPU times before comparing a solution with the reference (noise floor)."""
    efficiency_memory_floor_mb: float = Field(8.0, ge=0.0)
    """Added to both peak memories before comparing a solution with the reference."""
    on_hack: Literal["zero", "flag"] = "zero"
    """What a detected hack does: 'zero' caps the reward at 0 (a negative reward stays
    negative) for a strong finding, or a suspect one with a held-out test failing; 'flag'
    only records it. Flags are always counted in the metrics."""
    hack_penalty: float = Field(0.5, ge=0.0, le=10.0)
    """With on_hack 'zero', what a strong finding costs below 0 (hard-coded answers, a
    passed canary, forged results, `overfit_visible`: every visible test passed and most
    drawn ones failed, or a group passing its visible tests significantly more often than
    its drawn ones): such a reply gets min(reward, 0) - hack_penalty, so it earns less than
    an honest wrong answer and a policy is pushed away from trying hacks even where it
    cannot yet solve the task (a cap at 0 alone ties a hack with a failed attempt). A
    suspect finding only caps at 0. 0: every finding only caps."""
    canary_rate: float = Field(0.05, ge=0.0, le=0.5)
    """Share of training prompts replaced by a canary: the task with one visible test's
    expected value changed so that no correct solution passes it (rlvr.rewards.canary).
    Canary groups are never trained on; an episode passing the impossible test is flagged
    `canary` (certain) and counted in `hack/canary`. Code tasks only; 0: off."""
    learned: LearnedConfig = Field(default_factory=LearnedConfig)
    """The reward model the `learned` term scores with (docs/feedback.md)."""
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    """The server and rubric the `judge` term asks (docs/feedback.md)."""
    hack_ignore: list[str] = Field(default_factory=list)
    """Hack signatures not to check, e.g. [file_snooping] for tasks that read files (the
    names are the detector's, rlvr.rewards.hacks.FLAGS; an unknown one is refused when the
    run starts, with the valid names)."""

    @field_validator("clip")
    @classmethod
    def _clip(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is not None and value[0] >= value[1]:
            raise ValueError(f"clip low ({value[0]}) must be below high ({value[1]})")
        return value

    @field_validator("terms")
    @classmethod
    def _terms(cls, value: list[TermConfig]) -> list[TermConfig]:
        if not value:
            raise ValueError("at least one term is needed, e.g. [{name: completion}]")
        return value
