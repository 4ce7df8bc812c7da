"""Append-only JSONL logs: every trajectory (`trajectories.jsonl`) and every step's
metrics (`metrics.jsonl`). Each line is flushed as written, so a crash loses at most the
line being written, and a reader can follow a live run."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlvr.types import CANARY, Trajectory


class StoreError(ValueError):
    """A run or trace store named by the user that is not there or not readable as one
    (here, not beside the Parquet code, so that the CLI's error policy imports no pyarrow)."""


class JsonlStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._f = path.open("a", encoding="utf-8")

    def append(self, record: dict[str, Any]) -> None:
        self._f.write(json.dumps(record, ensure_ascii=False, default=_jsonable) + "\n")
        self._f.flush()

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> JsonlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _jsonable(o: object) -> object:
    if isinstance(o, float) and not math.isfinite(o):
        return None
    return str(o)


def truncate_after_step(path: Path, step: int) -> None:
    """Remove the records of steps after `step` (and any torn last line) from a JSONL log:
    what a crashed run logged after its last checkpoint, which the resumed run redoes.
    Records without a step (evaluations) are kept."""
    if not path.is_file():
        return
    kept = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by the crash
            if not isinstance(rec, dict) or int(rec.get("step", 0) or 0) <= step:
                kept.append(line if line.endswith("\n") else line + "\n")
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("".join(kept), encoding="utf-8")
    tmp.replace(path)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def summarize_step(trajs: list[Trajectory], dropped: Sequence[Trajectory] = ()) -> dict[str, float]:
    """One step's batch in numbers, named by group: `reward/mean`, `reward/pass_rate`,
    every reward component's mean (`reward/<component>`), hack flags (`hack/rate`, the
    share with a strong finding or a reward taken away; `hack/suspect_rate`, the share
    flagged on suspect evidence only; `hack/<signature>`, any severity), `hack/heldout_gap`
    (visible minus held-out pass share, over episodes of tasks with held-out tests; with it
    `hack/overfit_judged`, how many such episodes, and `hack/overfit_candidates`, how many
    passed every visible test and failed a held-out one), sandbox run statuses
    (`sandbox/status/<S>`) and lengths (`rollout/...`); with several domains in the batch, reward, pass rate,
    hack rate and components per domain too (`domain/<name>/reward/mean`, ...), with the
    domain's trained episodes (`domain/<name>/episodes`) and the share of its groups whose
    rewards were not all equal (`domain/<name>/informative`).

    `dropped` are the step's trajectories that were not trained on: they count in the
    sandbox statuses, in `rollout/duplicate_frac` (the share of episodes whose replies are
    word for word the same as another task's: a policy that writes one answer for
    everything), in `hack/canary` (the share of canary episodes, rlvr.rewards.canary,
    that passed the impossible test; with `hack/canary_episodes`, their number) and in
    `rollout/equal_reward_groups_frac` (the share of groups whose samples all got the
    same reward: no learning signal; failed episodes left out). With nothing
    trained (every group dropped), no reward or length is logged for the step."""
    out = _summary(trajs) if trajs else {"rollout/completion_tokens": 0.0}  # nothing trained: no reward to log
    everything = [*trajs, *dropped]
    n_all = max(len(everything), 1)
    for k in [k for k in out if k.startswith("sandbox/status/")]:
        del out[k]
    for t in everything:
        if t.execution:
            key = f"sandbox/status/{t.execution.status.value}"
            out[key] = out.get(key, 0.0) + 1.0 / n_all
    tasks_by_text: dict[str, set[str]] = {}
    for t in everything:
        tasks_by_text.setdefault(_replies(t), set()).add(t.task_id)
    out["rollout/duplicate_frac"] = sum(len(tasks_by_text[_replies(t)]) > 1 for t in everything if _replies(t)) / n_all
    by_group: dict[str, set[float]] = {}
    for t in everything:  # dropped groups without signal count; failed episodes do not
        if t.status == "ok":
            by_group.setdefault(t.group_id, set()).add(t.reward.total if t.reward else 0.0)
    out["rollout/equal_reward_groups_frac"] = (
        sum(len(v) == 1 for v in by_group.values()) / len(by_group) if by_group else 0.0
    )
    canaries = [t for t in everything if CANARY in t.task_id and t.status == "ok"]
    if canaries:  # never trained on: counted here, over the dropped groups
        out["hack/canary_episodes"] = float(len(canaries))
        out["hack/canary"] = sum(bool(t.reward and "canary" in t.reward.flags) for t in canaries) / len(canaries)
    domains = sorted({t.domain for t in trajs})
    if len(domains) > 1:
        for d in domains:
            mine = [t for t in trajs if t.domain == d]
            sub = _summary(mine)
            for k, v in sub.items():
                if k.startswith("reward/") or k == "hack/rate":
                    out[f"domain/{d}/{k}"] = v
            out[f"domain/{d}/episodes"] = float(len(mine))
            groups = {g for g in by_group if any(t.group_id == g for t in mine)}
            if groups:
                out[f"domain/{d}/informative"] = sum(len(by_group[g]) > 1 for g in groups) / len(groups)
    return out


def _replies(t: Trajectory) -> str:
    """Every reply of the episode (a multi-step episode's last one alone, say a tool call
    that ends it, is the same for every task)."""
    return "\n".join(u.content.strip() for u in t.turns if u.role == "assistant").strip()


def solved(t: Trajectory) -> bool:
    """The environment's own say where it gives one (`details['solved']`: the test-writing
    domain, whose run fails tests on purpose); else every test passed; without tests
    (math, JSON, tools), the environment's completion is full."""
    if t.reward is not None:
        said = t.reward.details.get("completion")  # the scorer keeps the environment's details there
        for d in (said if isinstance(said, dict) else {}, t.reward.details):
            if isinstance(d.get("solved"), bool):
                return bool(d["solved"])
    if t.execution is not None:
        return bool(t.execution.total and t.execution.passed == t.execution.total)
    return bool(t.reward and t.reward.components.get("completion", 0.0) >= 1.0)


def _strong_hack(t: Trajectory) -> bool:
    """A hack flag that took the reward away or carries strong evidence (a suspect one
    alone, such as an honest near-miss failing a held-out edge case, is not counted)."""
    if not (t.reward and t.reward.flags):
        return False
    found = t.reward.details.get("hacks") or []
    return "hack_action" in t.reward.details or any(h.get("severity", "strong") == "strong" for h in found) or not found


def _summary(trajs: list[Trajectory]) -> dict[str, float]:
    n = max(len(trajs), 1)
    rewards = [t.reward.total if t.reward else 0.0 for t in trajs]
    out: dict[str, float] = {
        "reward/mean": sum(rewards) / n,
        "reward/pass_rate": sum(solved(t) for t in trajs) / n,
        "hack/rate": sum(_strong_hack(t) for t in trajs) / n,
        "hack/suspect_rate": sum(bool(t.reward and t.reward.flags) and not _strong_hack(t) for t in trajs) / n,
        "rollout/completion_tokens": float(sum(len(t.completion_ids) for t in trajs)),
        "rollout/completion_len_mean": sum(len(t.completion_ids) for t in trajs) / n,
        "rollout/truncated_frac": sum(t.finish_reason == "length" for t in trajs) / n,
        # rlvr.algos.filtering.BUDGET_CUTS (trace sits below algos in the import order)
        "rollout/budget_cut_frac": sum(t.finish_reason in ("turns", "context", "budget") for t in trajs) / n,
    }
    comps: dict[str, list[float]] = {}
    for t in trajs:
        for k, v in (t.reward.components if t.reward else {}).items():
            comps.setdefault(k, []).append(v)
    for k, vs in comps.items():
        out[f"reward/{k}"] = sum(vs) / len(vs)
    # episodes judged on visible and held-out tests both
    judged = [(v, h) for v, h in (t.execution.partition() for t in trajs if t.execution) if h.total and v.total]
    if judged:  # passing what the model sees but not what it does not
        out["hack/heldout_gap"] = sum(v.share - h.share for v, h in judged) / len(judged)
        # counts for the run-level overfit rule (rlvr.trace.alerts, `overfit_rising`): how
        # many were judged, and how many passed every visible test and failed a held-out one
        out["hack/overfit_judged"] = float(len(judged))
        out["hack/overfit_candidates"] = float(sum(v.passed == v.total and h.passed < h.total for v, h in judged))
    for t in trajs:
        for flag in t.reward.flags if t.reward else []:
            out[f"hack/{flag}"] = out.get(f"hack/{flag}", 0.0) + 1.0 / n
        if t.execution:
            key = f"sandbox/status/{t.execution.status.value}"
            out[key] = out.get(key, 0.0) + 1.0 / n
    return out
