"""The reward terms learned from feedback, registered in the reward registry as group
terms (a config naming one imports this module: rlvr.config.reward.TERM_PLUGINS).

learned     a reward model's score of each reply (`reward.learned.model`, trained by
            `rlvr rm train`), the group's replies scored in batches in the rollout
            process
judge       a model behind an OpenAI-compatible server asked whether each reply meets
            the rubric's criteria (`reward.judge`, rlvr.feedback.judge)

Both are combined as a guarded bonus (rlvr.rewards.guard).

This module imports no torch until a term first scores: validating a config that names
`learned` stays instant.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError, RewardConfig
from rlvr.feedback import REWARD_MODEL_META as META_FILE
from rlvr.feedback.records import Message
from rlvr.rewards.registry import TermContext, register_group_reward
from rlvr.types import Task, Trajectory

_MODELS: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()  # one forward at a time: groups are scored from several threads
_CACHE: OrderedDict[str, float | None] = OrderedDict()
_CACHE_SIZE = 4096
ROLES = ("system", "user", "assistant", "tool")


def check_learned(cfg: RewardConfig) -> None:
    """The `learned` term needs `reward.learned.model`, a reward model directory."""
    path = cfg.learned.model
    if not path:
        raise ConfigError("reward.learned.model: the learned term needs a reward model (rlvr rm train writes one)")
    if not (Path(path) / META_FILE).is_file():
        raise ConfigError(f"reward.learned.model: {path} is not an rlvr reward model (no {META_FILE})")


Conversation = tuple[tuple[Message, ...], str]


def conversation(traj: Trajectory) -> Conversation | None:
    """(the messages before the last reply, the last reply), or None without a reply."""
    turns = [(t.role, t.content) for t in traj.turns if t.role in ROLES]
    last = max((i for i, (r, _) in enumerate(turns) if r == "assistant"), default=None)
    if last is None:
        return None
    return tuple(turns[:last]), turns[last][1]


def asked(trajs: Sequence[Trajectory], ctx: TermContext, score_all: bool) -> list[Conversation | None]:
    """The conversation of each reply the term scores: those that can earn its bonus
    (ctx.eligible), or all with `score_all`; None for the rest."""
    wanted = ctx.eligible if ctx.eligible is not None and not score_all else (True,) * len(trajs)
    return [conversation(t) if ok else None for t, ok in zip(trajs, wanted, strict=True)]


def _key(path: str, prompt: Sequence[Message], reply: str) -> str:
    text = "\x1e".join([path, *(f"{r}\x1f{c}" for r, c in prompt), reply])
    return hashlib.sha256(text.encode()).hexdigest()


def _model(cfg: RewardConfig) -> Any:
    from rlvr.feedback.rm import RewardModel

    key = (str(cfg.learned.model), cfg.learned.device)
    if key not in _MODELS:
        _MODELS[key] = RewardModel.load(key[0], device=key[1])
    return _MODELS[key]


@register_group_reward("learned", check=check_learned)
def learned(tasks: Sequence[Task], trajs: Sequence[Trajectory], ctx: TermContext) -> list[float | None]:
    """A reward model's score of each reply (reward.learned.model), in standard
    deviations of its scores on its training outputs (so `reward/learned` reads the same
    for any model), as a guarded bonus: it orders what the verifiable reward ties and
    never reorders what it ranks."""
    cfg = ctx.cfg
    path = str(cfg.learned.model)
    convs = asked(trajs, ctx, cfg.learned.score_all)
    keys = [_key(path, c[0], c[1]) if c else None for c in convs]
    with _LOCK:
        todo = sorted({k for k in keys if k is not None and k not in _CACHE})
        if todo:
            first = {k: c for k, c in zip(keys, convs, strict=True) if k in todo and c is not None}
            rm = _model(cfg)
            scores = rm.score([first[k][0] for k in todo], [first[k][1] for k in todo], cfg.learned.batch_size)
            mean, std = float(rm.meta.get("score_mean", 0.0)), max(float(rm.meta.get("score_std", 1.0)), 1e-6)
            for k, s in zip(todo, scores, strict=True):
                _CACHE[k] = None if s is None else (s - mean) / std
                if len(_CACHE) > _CACHE_SIZE:
                    _CACHE.popitem(last=False)
        return [_CACHE.get(k) if k is not None else None for k in keys]


_JUDGES: dict[str, Any] = {}


def check_judge(cfg: RewardConfig) -> None:
    """The `judge` term needs `reward.judge.base_url` and at least one criterion."""
    if not cfg.judge.base_url:
        raise ConfigError("reward.judge.base_url: the judge term needs an OpenAI-compatible server")
    if not cfg.judge.criteria:
        raise ConfigError("reward.judge.criteria: the judge term needs at least one yes/no criterion")
    if not cfg.judge.base_url.startswith(("http://", "https://")):
        raise ConfigError(f"reward.judge.base_url: {cfg.judge.base_url!r} is not an http(s) URL")


def judge_for(cfg: RewardConfig) -> Any:
    """The run's judge (one per distinct judge config in a process: its cache and budget)."""
    from rlvr.feedback.judge import Judge

    key = cfg.judge.model_dump_json()
    with _LOCK:
        if key not in _JUDGES:
            _JUDGES[key] = Judge(cfg.judge)
        return _JUDGES[key]


@register_group_reward("judge", check=check_judge)
def judge(tasks: Sequence[Task], trajs: Sequence[Trajectory], ctx: TermContext) -> list[float | None]:
    """The share of reward.judge.criteria a judge model says each reply meets, as a
    guarded bonus: it orders what the verifiable reward ties and never reorders what it ranks."""
    convs = asked(trajs, ctx, ctx.cfg.judge.score_all)
    scores = iter(judge_for(ctx.cfg).score([c for c in convs if c is not None]))
    return [next(scores) if c is not None else None for c in convs]
