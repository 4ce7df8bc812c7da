"""Building small batches of real trajectories with the tiny model."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
import torch

import rlvr.pipeline.producer as producer_mod
from rlvr.envs import EnvSettings
from rlvr.rollout.engine import Completion, SamplingParams
from rlvr.rollout.hf import HFEngine
from rlvr.rollout.models import load_tokenizer
from rlvr.rollout.runner import EpisodeSettings, run_episodes
from rlvr.tasks import load_tasks
from rlvr.types import RewardBreakdown, Trajectory


def tiny_batch(
    model, tok, n_prompts: int = 2, group: int = 4, max_new: int = 6, temperature: float = 1.0
) -> list[Trajectory]:  # type: ignore[no-untyped-def]
    tasks = load_tasks("bundled:python_functions")[:n_prompts]
    trajs = run_episodes(
        tasks,
        engine=HFEngine(model, tok, batch_size=8),
        tokenizer=tok,
        episodes=EpisodeSettings(EnvSettings(), group_size=group),
        params=SamplingParams(max_new_tokens=max_new, temperature=temperature, seed=123),
    )
    # Random-model code fails every test; give distinct rewards so advantages are non-zero.
    for i, t in enumerate(trajs):
        t.reward = RewardBreakdown(total=float(i % group) / group, components={"completion": 0.0})
    return trajs


class ScriptedPolicy:
    """Answers add_k tasks: half the samples right, half wrong; from call `hack_from` on,
    every sample exits before the tests instead. The behaviour log-probs are the training
    model's own, as a real engine's would be, so the learner sees an on-policy batch."""

    def __init__(self, tok: Any, hack_from: int | None, hack: str = "exit") -> None:
        self.tok, self.hack_from, self.hack, self.calls, self.model = tok, hack_from, hack, 0, None

    def bind(self, model: Any, *args: Any, **kw: Any) -> ScriptedPolicy:
        self.model = model
        return self

    def _logprobs(self, prompt: list[int], ids: list[int]) -> list[float]:
        assert self.model is not None
        with torch.no_grad():
            logits = self.model(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1 : -1].float()
            lp = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(ids)[:, None])[:, 0]
        return [float(x) for x in lp]

    def generate(self, prompts: list[list[int]], params: SamplingParams, progress: Any = None) -> list[Completion]:
        self.calls += 1
        time.sleep(0.05)  # a steady generation speed, so throughput is not timing noise
        out = []
        for i, p in enumerate(prompts):
            prompt = self.tok.decode(p)
            k = re.findall(r"add_(\d+)", prompt)[-1]
            if self.hack_from is not None and self.calls >= self.hack_from and self.hack == "hardcode":
                # the answers the prompt's tests expect, looked up (a canary's changed one too)
                table = dict(re.findall(rf"assert add_{k}\((-?\d+)\) == (-?\d+)", prompt))
                entries = ", ".join(f"{x}: {y}" for x, y in table.items())
                text = f"def add_{k}(x):\n    return {{{entries}}}.get(x, x)\n```"
            elif self.hack_from is not None and self.calls >= self.hack_from:
                text = "import sys\nsys.exit(0)\n```"
            elif i % 2 == 0:
                text = f"def add_{k}(x):\n    return x + {k}\n```"
            else:
                text = f"def add_{k}(x):\n    return x\n```"
            ids = self.tok(text, add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]
            out.append(Completion(list(ids), self._logprobs(list(p), ids), text, "eos"))
        return out

    version = 0
    shares_weights = True  # it reads the training model itself

    def load_version(self, version: int, weights: Any) -> None:
        self.version = version


def use_scripted_policy(
    monkeypatch: pytest.MonkeyPatch, hack_from: int | None = None, hack: str = "exit"
) -> ScriptedPolicy:
    """Training runs in this test generate with a ScriptedPolicy instead of the model."""
    policy = ScriptedPolicy(load_tokenizer("tiny-random"), hack_from, hack)
    monkeypatch.setattr(producer_mod, "make_engine", lambda cfg, model, tok, **kw: policy.bind(model))
    return policy


def write_add_tasks(
    path: Path, n: int = 10, extra_test: str | None = None, show_tests: bool = False, held_out: bool = False
) -> Path:
    """add_1 ... add_n tasks (three assert tests each, plus `extra_test` if given) as JSONL;
    `show_tests` quotes the tests in the prompt, `held_out` adds two held-out tests."""
    rows = []
    for k in range(1, n + 1):
        asserts = [f"assert add_{k}({x}) == {x + k}" for x in (0, 1, 5)] + ([extra_test] if extra_test else [])
        prompt = f"Write a Python function `add_{k}(x)` that returns x plus {k}."
        if show_tests:
            prompt += " It must pass:\n" + "\n".join(asserts)
        tests: dict[str, Any] = {"format": "assert", "tests": asserts}
        if held_out:
            tests["held_out"] = [f"assert add_{k}({x}) == {x + k}" for x in (7, -4)]
        rows.append(
            {"id": f"py/add_{k}", "domain": "python", "entry_point": f"add_{k}", "prompt": prompt, "tests": tests}
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def tiny_run(tmp_path: Path, tasks: Path, name: str, *extra: str) -> list[str]:
    """Overrides of examples/quickstart.yaml for a tiny training run: the tiny random
    model, `tasks`, 2 prompts x 2 samples per step, no evaluation, written to
    tmp_path/name."""
    return [
        "model.name_or_path=tiny-random",
        f"tasks.source={tasks}",
        "algo.group_size=2",
        "train.prompts_per_step=2",
        "eval.before_training=false",
        "eval.after_training=false",
        f"output_dir={tmp_path}",
        f"name={name}",
        *extra,
    ]
