"""Domain records (`domains: [...]`, rlvr.config.domains): a domain added over a
registered environment by configuration. The record's system message, terms and weight
are folded into their sections (idempotently: a saved config reads back the same), its
tasks join the run's relabelled with their ids kept, and its evaluation share is capped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from rlvr.config import ConfigError, RunConfig, TermConfig, load_run_config
from rlvr.tasks import TaskLoadError, pick_eval_tasks
from rlvr.train import preflight
from rlvr.types import Task

EASY = {
    "name": "python/easy",
    "env": "python",
    "source": "bundled:python_functions",
    "max_difficulty": 1,
    "system": "Answer with one function.",
    "terms": [{"name": "format", "weight": 0.1, "gate": "all_tests_pass"}],
    "weight": 2.0,
    "eval_tasks": 3,
}


def _cfg(**over: object) -> RunConfig:
    return RunConfig.model_validate({"tasks": {"source": "none"}, "domains": [EASY], **over})


def test_a_record_folds_its_system_message_terms_and_weight_into_their_sections(tmp_path: Path) -> None:
    cfg = _cfg()
    assert cfg.prompt.system_by_domain == {"python/easy": "Answer with one function."}
    assert cfg.curriculum.domain_weights == {"python/easy": 2.0}
    assert cfg.reward.terms == [
        TermConfig(name="completion"),
        TermConfig(name="format", weight=0.1, gate="all_tests_pass", domains=["python/easy"]),
    ]
    # what a run writes to config.yaml reads back to the same config: nothing folded twice
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg.model_dump(), sort_keys=False))
    again = load_run_config(tmp_path)
    assert again == cfg and len(again.reward.terms) == 2


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"prompt": {"system_by_domain": {"python/easy": "Other."}}}, "domains.0.system: prompt.system_by_domain"),
        ({"curriculum": {"domain_weights": {"python/easy": 3.0}}}, "domains.0.weight: curriculum.domain_weights"),
        ({"domains": [EASY, EASY]}, "python/easy named twice"),
        ({"domains": [{**EASY, "env": "math"}]}, "does not run in env 'math'"),
        ({"domains": [{**EASY, "name": "python easy"}]}, "is not a domain name"),
        ({"domains": [{**EASY, "min_difficulty": 3}]}, r"min_difficulty \(3\) is above max_difficulty \(1\)"),
        ({"domains": [{**EASY, "terms": [{"name": "format", "domains": ["math"]}]}]}, "pays its own domain only"),
        ({"domains": []}, "'none' leaves no tasks without domain records"),
    ],
)
def test_a_record_that_contradicts_the_config_is_refused_naming_the_key(over: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("domains.0.", r"domains\[0\]\.")):
        _cfg(**over)


def test_a_records_tasks_join_the_run_as_its_domain_with_ids_and_split_kept() -> None:
    cfg = RunConfig.model_validate(
        {
            "tasks": {"source": "bundled:json_extract"},
            "domains": [EASY, {"name": "math/hard", "source": "bundled:math_word", "min_difficulty": 3}],
        }
    )
    tasks = preflight.run_tasks(cfg)
    by: dict[str, list[Task]] = {}
    for t in tasks:
        by.setdefault(t.domain, []).append(t)
    assert set(by) == {"json", "python/easy", "math/hard"}
    from rlvr.tasks import load_tasks

    python = load_tasks("bundled:python_functions", 1, 1)
    assert [t.id for t in by["python/easy"]] == [t.id for t in python]  # ids kept: the source's own split
    assert {t.difficulty for t in by["python/easy"]} == {1}
    assert {t.difficulty for t in by["math/hard"]} == {3}
    assert by["math/hard"][0].tests == load_tasks("bundled:math_word", 3, 3)[0].tests


def test_a_task_in_two_places_or_an_unregistered_environment_is_one_line_naming_the_record() -> None:
    twice = RunConfig.model_validate({"tasks": {"source": "bundled:python_functions"}, "domains": [EASY]})
    with pytest.raises(ConfigError, match=r"^domains\[0\]\.source: task 'py/\w+' of bundled:python_functions is also"):
        preflight.run_tasks(twice)
    nowhere = _cfg(domains=[{"name": "chess/openings", "source": "bundled:math_word"}])
    with pytest.raises(ConfigError, match=r"^domains\[0\]\.name: chess/openings runs in environment 'chess', which is"):
        preflight.run_tasks(nowhere)
    missing = _cfg(domains=[{"name": "math/x", "source": "/no/such/file.jsonl"}])
    with pytest.raises(TaskLoadError, match=r"^domains\[0\]\.source: "):
        preflight.run_tasks(missing)


def test_a_task_its_records_environment_refuses_is_named(tmp_path: Path) -> None:
    """Python tasks relabelled as a math domain: the math environment's check refuses them."""
    rows = tmp_path / "t.jsonl"
    row = {"id": "p/1", "domain": "python", "prompt": "Write f.", "entry_point": "f",
           "tests": {"format": "assert", "tests": ["assert f() == 1"]}}  # fmt: skip
    rows.write_text(json.dumps(row) + "\n")
    cfg = _cfg(domains=[{"name": "math/odd", "source": str(rows)}])
    with pytest.raises(TaskLoadError, match=r"^domains\[0\] \(math/odd\): task 'p/1': "):
        preflight.run_tasks(cfg)


def _task(tid: str, domain: str) -> Task:
    return Task(id=tid, domain=domain, prompt="p", tests={"format": "answer", "answer": "1"})


def test_eval_caps_take_a_domains_first_tasks_and_leave_the_rest_to_the_others() -> None:
    held = [_task(f"a{i}", "a") for i in range(5)] + [_task(f"b{i}", "b") for i in range(5)]
    assert [t.id for t in pick_eval_tasks(held, 6)] == ["a0", "b0", "a1", "b1", "a2", "b2"]
    assert [t.id for t in pick_eval_tasks(held, 6, caps={"a": 1})] == ["a0", "b0", "b1", "b2", "b3", "b4"]
    assert [t.id for t in pick_eval_tasks(held, None, caps={"b": 2})] == ["a0", "a1", "a2", "a3", "a4", "b0", "b1"]
    assert [t.id for t in pick_eval_tasks(held, 4, caps={"a": 0})] == ["b0", "b1", "b2", "b3"]


def test_check_run_evaluates_at_most_a_records_eval_tasks(tmp_path: Path) -> None:
    cfg = RunConfig.model_validate(
        {"tasks": {"source": "bundled:math_word", "check": "off"}, "domains": [EASY], "eval": {"num_tasks": 12}}
    )
    inputs = preflight.check_run(cfg, check_model_name=False)
    domains = [t.domain for t in inputs.eval_tasks]
    assert domains.count("python/easy") == 3 and domains.count("math") == 9
