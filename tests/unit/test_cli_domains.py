"""`rlvr domains`: every bundled set's domains with their counts, reasoning-gym's usable
datasets as one domain each, and environments that ship no tasks, each with the
environment that runs it."""

from __future__ import annotations

import json

import pytest

from rlvr.cli import main
from rlvr.tasks import reasoning_catalogue


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
