"""Turning tasks into scored trajectories: prompt → G completions → environment → reward,
for one turn or several.

Each turn, the replies of every live episode are generated in one batched call; the
environments then judge them concurrently (coroutines; a sandbox run waits in a worker
thread, at most `workers` at once). An episode whose step is not done and returned
feedback continues, while turns remain: the feedback messages are rendered by the chat
template and their tokens appended to the episode's context. The trajectory's
`completion_ids` are everything after the first prompt — assistant tokens (trained,
loss mask 1, behaviour log-probs kept) interleaved with environment tokens (mask 0) —
so the learner sees exactly the sequence the policy saw.

Context budget: before another turn, if the context plus `max_new_tokens` would exceed
`max_context_tokens`, the episode ends there (finish_reason "context") with the reward
of its last attempt. That is the truncation policy: never cut inside a turn, never
drop the start of the conversation. An episode of several turns that wanted another and
had none left ends with finish_reason "turns"; one that its environment ended on its own
budget (a step's `info["cut"]`: tool calls, wall time) with "budget". The three are the
budget cuts `algo.compact_filter` masks from the loss. The context budget is never above
the policy's own limit (an engine's `context_limit`: the model's position limit for HF,
vLLM's max_model_len), whatever `max_context_tokens` says. An engine with an
`episode_cache` (HF) keeps each episode's keys and values between its turns for the
batch, so a turn prefills only the tokens it adds.

Failures: generation is retried up to `max_retries` times, then raises `RolloutError`.
An environment step that raises, or whose sandbox run ends in SANDBOX_ERROR
(infrastructure, never the program's fault), is retried up to `max_retries` times
(counted in `timings["retries"]`); after that the trajectory gets `status="error"` and
the reason in `error`, and its group is not scored. What happens to such groups is the
caller's policy (drop or fail).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from transformers import PreTrainedTokenizerBase

from rlvr.config import RunConfig
from rlvr.envs import EnvSettings, make_env
from rlvr.envs.base import Env, StepResult
from rlvr.envs.settings import env_settings, make_scorer
from rlvr.rewards.scorer import Scorer, group_indices
from rlvr.rollout.engine import Completion, Engine, EngineError, Report, SamplingParams
from rlvr.types import RunStatus, Task, Trajectory, Turn

PhaseReport = Callable[[str, int, int], None]
"""A progress callback: (phase, done, total), e.g. ('executing', 3, 16)."""


class RolloutError(RuntimeError):
    """Generation failed after its retries."""


def render(
    tokenizer: PreTrainedTokenizerBase,
    messages: list[dict[str, str]],
    response_prefix: str,
    tools: list[dict[str, Any]] | None = None,
) -> str:
    """The chat template over the messages, the assistant turn opened. `tools` (an
    environment's function schemas) go to a template that renders tools, in the model's
    own tool format; a template without them never sees them (the environment's prompt
    documents its format then)."""
    if tools and "tools" in str(getattr(tokenizer, "chat_template", "") or ""):
        schemas: list[dict[Any, Any] | Callable[..., Any]] = list(tools)
        text = tokenizer.apply_chat_template(messages, tools=schemas, add_generation_prompt=True, tokenize=False)
    else:
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    if not isinstance(text, str):
        raise TypeError("the tokenizer's chat template did not return text")
    return text + response_prefix


def encode_prompt(
    tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, str]], response_prefix: str
) -> list[int]:
    """Chat-template the messages, open the assistant turn, and append the response prefix."""
    ids: list[int] = tokenizer(render(tokenizer, messages, response_prefix), add_special_tokens=False)["input_ids"]
    return ids


def continuation(
    tokenizer: PreTrainedTokenizerBase,
    base: str,
    messages: list[dict[str, Any]],
    response_prefix: str,
    tools: list[dict[str, Any]] | None,
    after_eos: bool,
) -> tuple[str, list[int]] | None:
    """What follows a reply in an episode's tokens: `base` is the rendered context with
    the reply's text at its end, `messages` the conversation with that reply and the
    environment's answer; rendered with the next assistant turn opened, the text past
    `base` is tokenized on its own (environment tokens, never trained). The reply's
    end-of-turn token, when it ended with one (`after_eos`), is already in the context and
    is not repeated. Returns (the new rendered text, the new tokens), or None when the
    chat template rewrites earlier turns (its rendering does not start with `base`).
    The supervised stage encodes its conversations through this too (rlvr.sft.encode), so
    that it trains on the token sequence an episode has."""
    full = render(tokenizer, messages, response_prefix, tools)
    if not full.startswith(base):
        return None
    delta = full[len(base) :]
    eos = getattr(tokenizer, "eos_token", None)
    if after_eos and eos and delta.startswith(eos):
        delta = delta[len(eos) :]
    ids: list[int] = tokenizer(delta, add_special_tokens=False)["input_ids"]
    return full, ids


@dataclass
class _Episode:
    task: Task
    group_id: str
    env: Env
    messages: list[dict[str, str]]
    prompt_ids: list[int]
    text: str  # the rendered context so far (what context_ids encode)
    context_ids: list[int]
    turns: list[Turn]
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    last: StepResult | None = None
    finish_reason: str = ""
    error: str = ""
    retries: int = 0
    env_s: float = 0.0
    done: bool = False


@dataclass(frozen=True)
class EpisodeSettings:
    """How a run's episodes go, the same for every call: one record instead of a dozen
    keywords. `env` configures the environments; `scorer` (when given) adds the reward
    terms beyond the environment's verdict and combines them per group; `workers` bounds
    concurrent sandbox runs; generation and environment steps are retried `max_retries`
    times; an episode takes at most `max_turns` replies within `max_context_tokens`."""

    env: EnvSettings = field(default_factory=EnvSettings)
    group_size: int = 1
    response_prefix: str = ""
    workers: int = 4
    scorer: Scorer | None = None
    max_retries: int = 2
    max_turns: int = 1
    max_context_tokens: int | None = None


def episode_settings(cfg: RunConfig, *, group_size: int = 1, env: EnvSettings | None = None) -> EpisodeSettings:
    """A run's episode settings, from its config: its environments (`env` when given: a
    rollout worker's, which run on a sandbox fleet), its scorer and its limits."""
    env = env or env_settings(cfg)
    return EpisodeSettings(
        env=env,
        group_size=group_size,
        response_prefix=cfg.prompt.response_prefix,
        workers=cfg.sandbox.workers,
        scorer=make_scorer(cfg, env),
        max_retries=cfg.rollout.max_retries,
        max_turns=cfg.rollout.max_turns,
        max_context_tokens=cfg.rollout.max_context_tokens,
    )


def run_episodes(
    tasks: list[Task],
    *,
    engine: Engine,
    tokenizer: PreTrainedTokenizerBase,
    episodes: EpisodeSettings,
    params: SamplingParams,
    policy_version: int = 0,
    group_prefix: str = "",
    on_progress: PhaseReport | None = None,
) -> list[Trajectory]:
    """Trajectories for every task × `episodes.group_size` samples, grouped consecutively.
    The environment judges each reply; the scorer (when set) then adds the other reward
    components and combines them per group. `group_prefix` starts every group id (the
    step, say); `on_progress(phase, done, total)` hears 'generating' (sequences),
    'executing' (replies judged) and 'scoring' (groups)."""
    return asyncio.run(_run(tasks, engine, tokenizer, episodes, params, policy_version, group_prefix, on_progress))


async def _run(
    tasks: list[Task],
    engine: Engine,
    tokenizer: PreTrainedTokenizerBase,
    es: EpisodeSettings,
    params: SamplingParams,
    policy_version: int,
    group_prefix: str,
    on_progress: PhaseReport | None,
) -> list[Trajectory]:
    report = on_progress or (lambda phase, done, total: None)
    gate = asyncio.Semaphore(es.workers)
    limit = getattr(engine, "context_limit", None)  # the policy's own position limit, where the engine knows it
    if limit is not None and (es.max_context_tokens is None or es.max_context_tokens > limit):
        es = replace(es, max_context_tokens=int(limit))
    episodes: list[_Episode] = []
    for ti, task in enumerate(tasks):
        first = make_env(task.domain, es.env)
        opening = await first.reset(task)
        tools = getattr(first, "tools", None)
        text = render(tokenizer, opening, es.response_prefix, tools)
        prompt_ids: list[int] = tokenizer(text, add_special_tokens=False)["input_ids"]
        for _ in range(es.group_size):
            env = make_env(task.domain, es.env)
            await env.reset(task)
            turns = [Turn(role=m["role"], content=m["content"]) for m in opening]  # type: ignore[arg-type]
            episodes.append(
                _Episode(task, f"{group_prefix}{ti}:{task.id}", env, list(opening), prompt_ids, text, prompt_ids, turns)
            )
    # an engine that can keep each episode's context between turns does so for this batch
    keep = getattr(engine, "episode_cache", None) if es.max_turns > 1 else None
    with keep() if keep is not None else contextlib.nullcontext():
        gen_s = await _turns(episodes, engine, tokenizer, es, params, gate, report, on_progress)
    trajs = [_trajectory(e, policy_version, gen_s) for e in episodes]
    if es.scorer is not None:
        await _score(es.scorer, episodes, trajs, report)
    return trajs


async def _turns(
    episodes: list[_Episode],
    engine: Engine,
    tokenizer: PreTrainedTokenizerBase,
    es: EpisodeSettings,
    params: SamplingParams,
    gate: asyncio.Semaphore,
    report: PhaseReport,
    on_progress: PhaseReport | None,
) -> float:
    """Every turn of every live episode; the seconds spent generating."""
    gen_s = 0.0
    for turn in range(es.max_turns):
        live = [e for e in episodes if not e.done]
        if not live:
            break
        t0 = time.perf_counter()
        turn_params = params if turn == 0 or params.seed is None else replace(params, seed=params.seed + 1000003 * turn)
        n = len(live)
        generated = (lambda k, n=n: report("generating", k, n)) if on_progress is not None else None
        completions = _generate(engine, [e.context_ids for e in live], turn_params, es.max_retries, generated)
        gen_s += time.perf_counter() - t0
        more = turn + 1 < es.max_turns

        async def advance(e: _Episode, c: Completion, more: bool, n: int, judged: list[int]) -> None:
            await _advance(e, c, more, tokenizer, es, params.max_new_tokens, gate)
            judged[0] += 1
            report("executing", judged[0], n)

        report("executing", 0, n)
        count = [0]
        await asyncio.gather(*(advance(e, c, more, n, count) for e, c in zip(live, completions, strict=True)))
    return gen_s


async def _score(scorer: Scorer, episodes: list[_Episode], trajs: list[Trajectory], report: PhaseReport) -> None:
    """Score every group whose episodes all ended ok, concurrently."""
    groups = [g for g in group_indices(trajs) if all(trajs[i].status == "ok" for i in g)]
    scored = 0

    async def score(g: list[int]) -> None:
        nonlocal scored
        await asyncio.to_thread(scorer.score_group, [episodes[i].task for i in g], [trajs[i] for i in g])
        scored += 1
        report("scoring", scored, len(groups))

    await asyncio.gather(*(score(g) for g in groups))


def _generate(
    engine: Engine, prompts: list[list[int]], params: SamplingParams, max_retries: int, progress: Report | None
) -> list[Completion]:
    for attempt in range(max_retries + 1):
        try:
            # engines that report progress take it as a keyword; others are called as before
            return engine.generate(prompts, params, progress=progress) if progress else engine.generate(prompts, params)
        except Exception as e:  # the engine's failure: retry, then report it by name
            if isinstance(e, EngineError) and not e.retryable:
                raise  # permanent (a server that cannot give token ids) or already retried by the engine
            if attempt == max_retries:
                raise RolloutError(f"generation failed {max_retries + 1} times: {type(e).__name__}: {e}") from e
    raise AssertionError("unreachable")


async def _advance(
    e: _Episode,
    comp: Completion,
    may_continue: bool,
    tokenizer: PreTrainedTokenizerBase,
    es: EpisodeSettings,
    max_new_tokens: int,
    gate: asyncio.Semaphore,
) -> None:
    """Record the reply, judge it, and either finish the episode or append the feedback."""
    reply = es.response_prefix + comp.text
    e.completion_ids += comp.token_ids
    e.logprobs += comp.logprobs
    e.loss_mask += [1] * len(comp.token_ids)
    e.context_ids = e.context_ids + comp.token_ids
    e.turns.append(Turn("assistant", reply, token_ids=comp.token_ids, logprobs=comp.logprobs, trainable=True))
    e.finish_reason = comp.finish_reason
    t1 = time.perf_counter()
    step, error = None, ""
    for attempt in range(es.max_retries + 1):
        e.retries += attempt > 0
        try:
            async with gate:
                step = await e.env.step(reply)
        except Exception as exc:  # an environment or sandbox crash: retry, then record it
            step, error = None, f"{type(exc).__name__}: {exc}"[:2000]
            continue
        ex = step.execution
        if ex is not None and ex.status is RunStatus.SANDBOX_ERROR:
            error = f"sandbox error: {ex.error}"[:2000]
            continue
        error = ""
        break
    e.env_s += time.perf_counter() - t1
    e.last, e.error = step, error
    if step is not None and step.info.get("cut"):
        e.finish_reason = "budget"  # the environment's own budget (tool calls, wall time) ended it
    if error or step is None or step.done or not step.messages or not may_continue:
        wanted_more = step is not None and not step.done and step.messages and not error
        if wanted_more and es.max_turns > 1:
            e.finish_reason = "turns"  # it wanted another turn and had none left (its last reply cut or not)
        e.done = True
        return
    # another attempt: render the conversation with the feedback, append only the new tokens
    messages = [*e.messages, {"role": "assistant", "content": reply}, *step.messages]
    tools = getattr(e.env, "tools", None)
    cont = continuation(tokenizer, e.text + comp.text, messages, es.response_prefix, tools, comp.finish_reason == "eos")
    if cont is None:
        e.done, e.finish_reason = True, "template"  # a chat template that rewrites history: stop here
        return
    full, delta_ids = cont
    if (
        es.max_context_tokens is not None
        and len(e.context_ids) + len(delta_ids) + max_new_tokens > es.max_context_tokens
    ):
        e.done, e.finish_reason = True, "context"
        return
    e.completion_ids += delta_ids
    e.logprobs += [0.0] * len(delta_ids)
    e.loss_mask += [0] * len(delta_ids)
    e.context_ids = e.context_ids + delta_ids
    e.messages, e.text = messages, full
    e.turns += [Turn(role=m["role"], content=m["content"]) for m in step.messages]  # type: ignore[arg-type]


def _trajectory(e: _Episode, policy_version: int, gen_s: float) -> Trajectory:
    step = e.last
    return Trajectory(
        task_id=e.task.id,
        domain=e.task.domain,
        group_id=e.group_id,
        turns=e.turns,
        prompt_ids=e.prompt_ids,
        completion_ids=e.completion_ids,
        logprobs=e.logprobs,
        loss_mask=e.loss_mask,
        finish_reason=e.finish_reason,
        execution=step.execution if step else None,
        reward=step.reward if step and not e.error else None,
        policy_version=policy_version,
        timings={
            "generate_s": gen_s,
            "env_s": e.env_s,
            "retries": float(e.retries),
            "turns": float(sum(t.role == "assistant" for t in e.turns)),
        },
        status="error" if e.error else "ok",
        error=e.error,
    )
