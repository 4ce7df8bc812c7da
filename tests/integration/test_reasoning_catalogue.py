"""reasoning-gym's catalogue as run-time task sources (rlvr.tasks.reasoning_catalogue):
every dataset is accounted for (used, or left out with why, each reason checked), the
drawn tasks are the same in any process on any day, the task check passes the set but
for tasks it names, and a run over more than a hundred domains trains, checkpoints and
resumes exactly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rlvr.config import RunConfig, load_config
from rlvr.envs.base import check_task
from rlvr.envs.task_check import check_task_set
from rlvr.rollout.models import load_policy
from rlvr.tasks import reasoning_catalogue as rc
from rlvr.tasks.check import VerdictCache
from rlvr.tasks.loader import TaskLoadError, load_tasks
from rlvr.train.checkpoint import latest_checkpoint
from rlvr.train.loop import train
from tests.integration.toy_env import write_toy_tasks

ROOT = Path(__file__).resolve().parents[2]
HASH_SEED = [n for n, why in rc.EXCLUDED.items() if "hash seed" in why]


def test_every_dataset_of_the_installed_catalogue_is_used_or_left_out_with_why() -> None:
    from importlib.metadata import version

    import reasoning_gym

    names = rc.catalogue()
    assert len(names) == 106 and version("reasoning-gym") == "0.1.25"  # what EXCLUDED was measured on
    assert set(rc.EXCLUDED) <= set(names)
    assert len(rc.usable()) == 96 and not set(rc.usable()) & set(rc.EXCLUDED)
    assert all(len(why) > 20 for why in rc.EXCLUDED.values())
    # the reasons, each seen again: the tuple-comparing scorers and the one that pays anything
    for name in ("arc_agi", "rearc"):
        entry = next(iter(reasoning_gym.create_dataset(name, size=1, seed=17)))
        fn = reasoning_gym.get_score_answer_fn(name)
        assert fn(entry["answer"], entry) == 1.0
        assert fn(entry["answer"], json.loads(json.dumps(entry, default=str))) < 1.0
    halting = next(iter(reasoning_gym.create_dataset("game_of_life_halting", size=1, seed=17)))
    assert reasoning_gym.get_score_answer_fn("game_of_life_halting")("no idea", halting) == 1.0


def _digests(env: dict[str, str], names: list[str]) -> dict[str, str]:
    code = (
        "import hashlib, json, sys\nfrom rlvr.tasks import reasoning_catalogue as rc\n"
        "print(json.dumps({n: hashlib.sha256(json.dumps(rc.entries(n, 3, 5), sort_keys=True).encode())"
        ".hexdigest() for n in sys.argv[1:]}))"
    )
    r = subprocess.run(
        [*env.pop("_PREFIX", "").split(), sys.executable, "-c", code, *names],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=ROOT,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    out: dict[str, str] = json.loads(r.stdout)
    return out


@pytest.mark.skipif(
    shutil.which("faketime") is None and os.environ.get("CI") != "true",
    reason="faketime is not installed (make faketime)",
)
def test_the_drawn_tasks_are_the_same_in_any_process_on_any_day() -> None:
    names = rc.usable() + HASH_SEED
    a = _digests({"PYTHONHASHSEED": "1"}, names)
    b = _digests({"PYTHONHASHSEED": "2"}, names)
    later = _digests({"PYTHONHASHSEED": "1", "_PREFIX": "faketime 2027-06-15"}, names)
    assert {n for n in rc.usable() if a[n] != b[n]} == set()
    assert {n for n in rc.usable() if a[n] != later[n]} == set()  # time_intervals reads the clock: pinned
    assert {n for n in HASH_SEED if a[n] != b[n]} == set(HASH_SEED)  # why they are left out


def test_sources_name_datasets_sizes_and_seeds_and_refuse_the_rest() -> None:
    tasks = load_tasks("reasoning_gym:gcd,lcm:3:5", check=check_task)
    assert [t.id for t in tasks] == [f"rg5/{n}/{i}" for n in ("gcd", "lcm") for i in range(3)]
    assert {t.domain for t in tasks} == {"reasoning/gcd", "reasoning/lcm"}
    assert (
        tasks[0].tests["dataset"] == "gcd"
        and tasks[0].reference == f"<answer>{tasks[0].tests['entry']['answer']}</answer>"
    )
    assert tasks[0].prompt.endswith(rc.SUFFIX)
    for spec, message in [
        ("reasoning_gym:nope", "no reasoning-gym dataset 'nope' (106 in the installed package)"),
        ("reasoning_gym:composite", "dataset 'composite' is left out: a mixture"),
        ("reasoning_gym:gcd:x", "SIZE and SEED must be integers"),
        ("reasoning_gym:gcd:0", "SIZE 0 is not within 1..10000"),
        ("reasoning_gym:", "expected reasoning_gym:NAMES[:SIZE[:SEED]]"),
    ]:
        with pytest.raises(TaskLoadError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
            load_tasks(spec)


def test_the_task_check_passes_the_catalogue_but_for_the_tasks_it_names(tmp_path: Path) -> None:
    tasks = load_tasks("reasoning_gym:all", check=check_task)
    assert len(tasks) == 96 * 8 and len({t.domain for t in tasks}) == 96
    report = check_task_set(tasks, RunConfig(), cache=VerdictCache(tmp_path))
    assert report.failing_domains() == []
    reasons = {v.task_id: v.problems for v in report.quarantined}
    assert reasons == {
        "rg17/ab/1": ("the reference earns completion 0.000, not full credit (1)",),  # its answer is empty
        **{
            f"rg17/polynomial_equations/{i}": ("the exploit spray_boxed earns 1.000, more than a wrong answer (0.000)",)
            for i in (0, 3, 4)
        },
    }


def _weights(run: Path) -> dict[str, torch.Tensor]:
    ckpt = latest_checkpoint(run / "checkpoints")
    assert ckpt is not None
    model, _ = load_policy(str(ckpt / "model"))
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def test_a_run_over_more_than_a_hundred_domains_trains_checkpoints_and_resumes_exactly(tmp_path: Path) -> None:
    toy = write_toy_tasks(tmp_path / "toy.jsonl", n=8)  # a reward a random model earns, so weights move
    source = "reasoning_gym:all:2+bundled:math_word+bundled:json_extract+bundled:trading+bundled:itops+" + str(toy)
    over = [
        "model.name_or_path=tiny-random",
        f"tasks.source={source}",
        "plugins=[tests.integration.toy_env]",
        "curriculum.domain_weights={toy-length: 100}",  # the bandit starts on the domain that moves weights
        "curriculum.max_domain_share=1.0",
        "tasks.check_sample=2",  # both tasks of each reasoning domain (one of ab's two is quarantined)
        "generation.max_new_tokens=6",
        "algo.group_size=2",
        "train.prompts_per_step=8",
        "train.lr=1e-3",
        "eval.before_training=false",
        "eval.after_training=false",
        f"output_dir={tmp_path}",
    ]

    def cfg(name: str, steps: int):  # type: ignore[no-untyped-def]
        return load_config(ROOT / "examples" / "hundred_domains.yaml", [*over, f"name={name}", f"train.steps={steps}"])

    straight = train(cfg("straight", 3), quiet=True)
    train(cfg("resumed", 2), quiet=True)
    resumed = train(cfg("resumed", 3), quiet=True, resume=True)
    assert resumed.rewards == straight.rewards

    def drawn(name: str) -> list[tuple[int, str]]:
        rows = [json.loads(line) for line in (tmp_path / name / "trajectories.jsonl").read_text().splitlines()]
        return [(r["step"], r["task_id"]) for r in rows]

    assert drawn("resumed") == drawn("straight")
    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "resumed")
    assert all(torch.equal(a[n], b[n]) for n in a)
    fresh, _ = load_policy("tiny-random", seed=0)
    assert any(not torch.equal(a[n], p) for n, p in fresh.named_parameters())  # training moved them
    checked = json.loads((tmp_path / "straight" / "task_check.json").read_text())
    assert len(checked["domains"]) >= 100  # every domain sampled by the task check
    domains = {t.domain for t in load_tasks(source, check=check_task)}
    assert len(domains) >= 100
