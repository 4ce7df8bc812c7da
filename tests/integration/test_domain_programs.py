"""The C++ and JavaScript program domains run for real: every reference program passes in
the sandbox, and good, wrong, malformed and hostile replies get their rewards."""

from __future__ import annotations

import pytest

from rlvr.tasks.generators import programgen
from rlvr.tasks.loader import load_tasks
from tests.domain_episodes import _episode
from tests.unit.test_domain_programs import CPP_HOSTILE, JS_HOSTILE


@pytest.mark.parametrize("lang", ["cpp", "javascript"])
def test_every_reference_program_passes_in_the_sandbox(lang: str) -> None:
    programgen.verify(load_tasks(f"bundled:programs_{lang}"))


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
