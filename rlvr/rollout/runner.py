"""Turning tasks into scored trajectories: prompt → G completions → environment → reward.

Generation is one batched call for all prompts of a step; the environment steps (sandbox
executions) then run concurrently on a thread pool, since each waits on a child process.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from transformers import PreTrainedTokenizerBase

from rlvr.envs import EnvSettings, make_env
from rlvr.rewards.scorer import Scorer, group_indices
from rlvr.rollout.engine import Engine, SamplingParams
from rlvr.types import RunStatus, Task, Trajectory, Turn


class RolloutError(RuntimeError):
    """Generation failed after its retries."""


def encode_prompt(
    tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, str]], response_prefix: str
) -> list[int]:
    """Chat-template the messages, open the assistant turn, and append the response prefix."""
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    if not isinstance(text, str):
        raise TypeError("the tokenizer's chat template did not return text")
    ids: list[int] = tokenizer(text + response_prefix, add_special_tokens=False)["input_ids"]
    return ids


def run_episodes(
    tasks: list[Task],
    *,
    engine: Engine,
    tokenizer: PreTrainedTokenizerBase,
    settings: EnvSettings,
    params: SamplingParams,
    group_size: int = 1,
    response_prefix: str = "",
    policy_version: int = 0,
    workers: int = 4,
    group_prefix: str = "",
    scorer: Scorer | None = None,
    max_retries: int = 2,
) -> list[Trajectory]:
    """Trajectories for every task × group_size samples, grouped consecutively. The
    environment judges each reply; `scorer` (when given) then adds the other reward
    components and combines them per group.

    Failures: generation is retried up to `max_retries` times, then raises
    `RolloutError`. An environment step that raises, or whose sandbox run ends in
    SANDBOX_ERROR (infrastructure, never the program's fault), is retried up to
    `max_retries` times (each retry counted in `timings["retries"]`); after that the
    trajectory gets `status="error"` and the reason in `error`, and its group is not
    scored. What happens to such groups is the caller's policy (drop or fail)."""
    episodes = []
    for ti, task in enumerate(tasks):
        messages = make_env(task.domain, settings).reset(task)
        prompt_ids = encode_prompt(tokenizer, messages, response_prefix)
        for _ in range(group_size):
            episodes.append((f"{group_prefix}{ti}:{task.id}", task, messages, prompt_ids))
    t0 = time.perf_counter()
    for attempt in range(max_retries + 1):
        try:
            completions = engine.generate([e[3] for e in episodes], params)
            break
        except Exception as e:  # the engine's failure: retry, then report it by name
            if attempt == max_retries:
                raise RolloutError(f"generation failed {max_retries + 1} times: {type(e).__name__}: {e}") from e
    gen_s = time.perf_counter() - t0

    def judge(i: int) -> Trajectory:
        group_id, task, messages, prompt_ids = episodes[i]
        comp = completions[i]
        t1 = time.perf_counter()
        reply = response_prefix + comp.text
        step, error, retries = None, "", 0
        for attempt in range(max_retries + 1):
            retries = attempt
            try:
                env = make_env(task.domain, settings)
                env.reset(task)
                step = env.step(reply)
            except Exception as e:  # an environment or sandbox crash: retry, then record it
                step, error = None, f"{type(e).__name__}: {e}"[:2000]
                continue
            ex = step.execution
            if ex is not None and ex.status is RunStatus.SANDBOX_ERROR:
                error = f"sandbox error: {ex.error}"[:2000]
                continue
            error = ""
            break
        turns = [Turn(role=m["role"], content=m["content"]) for m in messages]  # type: ignore[arg-type]
        turns.append(
            Turn(role="assistant", content=reply, token_ids=comp.token_ids, logprobs=comp.logprobs, trainable=True)
        )
        return Trajectory(
            task_id=task.id,
            domain=task.domain,
            group_id=group_id,
            turns=turns,
            prompt_ids=prompt_ids,
            completion_ids=comp.token_ids,
            logprobs=comp.logprobs,
            loss_mask=[1] * len(comp.token_ids),
            finish_reason=comp.finish_reason,
            execution=step.execution if step else None,
            reward=step.reward if step and not error else None,
            policy_version=policy_version,
            timings={"generate_s": gen_s, "env_s": time.perf_counter() - t1, "retries": float(retries)},
            status="error" if error else "ok",
            error=error,
        )

    with ThreadPoolExecutor(max_workers=workers) as pool:
        trajs = list(pool.map(judge, range(len(episodes))))
        if scorer is not None:
            groups = [g for g in group_indices(trajs) if all(trajs[i].status == "ok" for i in g)]
            list(pool.map(lambda g: scorer.score_group([episodes[i][1] for i in g], [trajs[i] for i in g]), groups))
    return trajs
