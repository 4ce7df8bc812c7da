"""The C++ and JavaScript program domains: extraction, rewards, hostile replies (the ones that
compile or run programs: tests/integration/test_domain_programs.py)."""

from __future__ import annotations

import json

import pytest

from rlvr.rewards.extract import extract_code
from rlvr.tasks.generators import programgen
from rlvr.tasks.loader import BUNDLED_DIR, load_tasks

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


CPP_HOSTILE = "```cpp\n#include <unistd.h>\nint main() { while (true) fork(); }\n```"
JS_HOSTILE = "```javascript\nconst a = []; while (true) a.push(new Array(1e6).fill(1));\n```"


def test_program_tasks_skip_the_python_analyses() -> None:
    from rlvr.rewards.scorer import is_code_task

    cpp = load_tasks("bundled:programs_cpp")[0]
    assert not is_code_task(cpp)
    assert is_code_task(load_tasks("bundled:python_functions")[0])
