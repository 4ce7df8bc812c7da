"""`rlvr domains`: every bundled set's domains with their counts, reasoning-gym's usable
datasets as one domain each, and environments that ship no tasks, each with the
environment that runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.cli import main
from rlvr.tasks import load_tasks, reasoning_catalogue


def test_rlvr_domains_lists_each_domain_with_its_environment_and_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["domains", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    by = {(r["domain"], r["source"]): r for r in rows}
    assert by[("python", "bundled:python_functions")] == {
        "domain": "python",
        "env": "python",
        "source": "bundled:python_functions",
        "tasks": 308,
    }
    assert (
        by[("reasoning/gcd", "reasoning_gym:gcd")]["env"] == "reasoning"
        and by[("reasoning/gcd", "reasoning_gym:gcd")]["tasks"] is None
    )
    drawn = {r["domain"] for r in rows if r["source"] and r["source"].startswith("reasoning_gym:")}
    assert len(drawn) == len(reasoning_catalogue.usable()) == 96
    assert len({r["domain"] for r in rows}) >= 100
    assert ("repo_agent", "bundled:repos") in by  # a plugin's environment, registered for listing
    assert main(["domains"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[-1].endswith("environments") and text[-1].split()[0] == str(len({r["domain"] for r in rows}))


def test_rlvr_domains_lists_a_configs_domain_records_with_their_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "records.yaml"
    config.write_text(
        "tasks:\n  source: none\ndomains:\n"
        "  - {name: python/easy, source: 'bundled:python_functions', max_difficulty: 1}\n"
        "  - {name: math/hard, source: 'bundled:math_word', min_difficulty: 3}\n"
    )
    assert main(["domains", "--config", str(config), "--json"]) == 0
    rows = {r["domain"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    easy = len(load_tasks("bundled:python_functions", 1, 1))
    assert rows["python/easy"] == {"domain": "python/easy", "env": "python", "source": "bundled:python_functions",
                                   "tasks": easy}  # fmt: skip
    assert rows["math/hard"]["env"] == "math" and rows["math/hard"]["tasks"] == len(load_tasks("bundled:math_word", 3))
    assert 0 < easy < 308
