"""The tool-use, operations, repository, reasoning-gym and C++/JavaScript domains, each
with scripted replies (correct, wrong, malformed, hostile)."""

from __future__ import annotations

import json

import pytest

from rlvr.envs import EnvSettings, make_env
from rlvr.envs.base import run_sync
from rlvr.rewards.extract import extract_code
from rlvr.tasks import programgen
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
