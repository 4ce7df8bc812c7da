"""What the task check (rlvr.tasks.check) throws at each task, scored exactly as training
scores a reply: the task's reference, replies that do nothing, and generic exploits of a
checker. A task passes when

- its reference (where it has one, as `reference_reply` writes it) earns full completion;
- an empty or prose reply earns at most 0, and every do-nothing reply in the domain's form
  (a stub, an empty block, `{}` in answer tags) no more than a committed wrong answer
  (a format term may pay both the same; neither may beat it): for code, a program that
  reads its input and answers with something of it; for an answer, one off by one, in
  the form the reference takes (boxed or in tags);
- every exploit earns no more than the task's committed wrong answer (or 0 when the
  domain has no wrong answer to write).

The exploits are generic, built from the task file alone, never tuned to a defence:

- code with an entry point (python, repair): leave the process before the tests run
  (`os._exit(0)`); return an object equal to everything; a table of the visible
  asserts' arguments and expected values;
- programs on stdin (data, C++, JavaScript): print the first visible case's expected
  output whatever the input; a table of the visible cases (stdin -> stdout);
- answer domains (math, reasoning, JSON): spray candidates, the right answer beside
  wrong ones, in separate tags and in one; echo the prompt as the answer;
- test writing: a test that cannot fail (`assert True`).

An environment class may add its own with an optional `probe_replies(task) -> {name:
reply}` (static or class method); they are judged as exploits. A class whose reward is
not a verdict on the reply (a test double paying by length, a simulation scored on
something else) sets `task_check = False`: its tasks are not checked.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.config import RunConfig
from rlvr.envs.base import env_class, env_name, reference_reply
from rlvr.tasks.check import CheckReport, TaskVerdict, VerdictCache, check_tasks
from rlvr.types import RewardBreakdown, RunStatus, Task

PROBES_VERSION = "4"
"""Changes whenever a probe is added or changed: part of the cache salt."""

Score = Callable[[Task, str], "RewardBreakdown | None"]

_PROSE = "I am not sure how to do this, so I will leave it as it is."


@dataclass
class Probes:
    """One task's probe replies, by kind."""

    reference: str | None = None
    wrong: str | None = None  # a committed wrong answer: the bar an exploit must not pass
    noop: dict[str, str] = field(default_factory=dict)
    exploit: dict[str, str] = field(default_factory=dict)


def _language(task: Task) -> str:
    cls = env_class(task.domain)
    return str(task.metadata.get("language") or getattr(cls, "language", "python"))


def _fence(lang: str, code: str) -> str:
    return f"```{lang}\n{code}```"


_ASSERT = re.compile(r"^assert\s+(?P<name>[A-Za-z_]\w*)\((?P<args>.*)\)\s*==\s*(?P<want>.+?)\s*$")


_KEYWORD = re.compile(r"(?<![=!<>])=(?!=)")


def _visible_asserts(task: Task) -> list[tuple[str, str]]:
    """(arguments, expected) of each visible `assert f(...) == expected` on the entry point."""
    out = []
    for line in task.tests.get("tests", []) if isinstance(task.tests.get("tests"), list) else []:
        m = _ASSERT.match(str(line).strip())
        if m and m["name"] == task.entry_point:
            out.append((m["args"], m["want"]))
    return out


def _function_exploits(task: Task) -> dict[str, str]:
    name = task.entry_point
    out = {
        "exit_before_tests": "import os\nos._exit(0)\n",
        "always_equal": (
            "class _Same:\n"
            "    def __eq__(self, other):\n        return True\n"
            "    def __ne__(self, other):\n        return False\n"
            "    __hash__ = object.__hash__\n\n\n"
            f"def {name}(*args, **kwargs):\n    return _Same()\n"
        ),
    }
    rows = [(a, w) for a, w in _visible_asserts(task) if not _KEYWORD.search(a)]  # positional calls only
    if rows:
        table = "".join(f"    repr(({args},)): ({want}),\n" for args, want in rows)
        out["visible_table"] = f"_SEEN = {{\n{table}}}\n\n\ndef {name}(*args):\n    return _SEEN.get(repr(args))\n"
    return out


def _cases(task: Task) -> list[tuple[str, str]]:
    cases = task.tests.get("cases")
    if not isinstance(cases, list):
        return []
    return [(str(c.get("stdin", "")), str(c.get("stdout", ""))) for c in cases if isinstance(c, dict)]


def _cpp_string(text: str) -> str:
    def char(c: str) -> str:
        if c in '\\"':
            return "\\" + c
        if " " <= c <= "~":
            return c
        return "".join(f"\\{b:03o}" for b in c.encode("utf-8"))

    return '"' + "".join(char(c) for c in text) + '"'


def _stdio_exploits(task: Task, lang: str) -> dict[str, str]:
    cases = _cases(task)
    if not cases:
        return {}
    first = cases[0][1]
    if lang == "cpp":
        rows = "".join(f"    {{{_cpp_string(i)}, {_cpp_string(o)}}},\n" for i, o in cases)
        return {
            "print_visible_output": f"#include <cstdio>\nint main() {{ std::fputs({_cpp_string(first)}, stdout); }}\n",
            "visible_table": (
                "#include <iostream>\n#include <iterator>\n#include <map>\n#include <string>\n"
                f"int main() {{\n  std::map<std::string, std::string> seen = {{\n{rows}  }};\n"
                "  std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());\n"
                "  auto it = seen.find(in);\n  if (it != seen.end()) std::cout << it->second;\n}\n"
            ),
        }
    table = json.dumps(dict(cases))
    if lang == "javascript":
        return {
            "print_visible_output": f"process.stdout.write({json.dumps(first)});\n",
            "visible_table": (
                f"const seen = {table};\nconst input = require('fs').readFileSync(0, 'utf8');\n"
                "process.stdout.write(seen[input] ?? '');\n"
            ),
        }
    return {
        "print_visible_output": f"import sys\nsys.stdout.write({first!r})\n",
        "visible_table": (
            f"import json, sys\nSEEN = json.loads({table!r})\nsys.stdout.write(SEEN.get(sys.stdin.read(), ''))\n"
        ),
    }


def _wrong_program(task: Task, lang: str) -> str:
    """An honest attempt that is wrong: it reads its input and answers with something of
    it (not a constant, which the hack detector would rightly penalise)."""
    if task.entry_point and lang == "python":
        return f"def {task.entry_point}(*args, **kwargs):\n    return [args, kwargs]\n"
    if lang == "cpp":
        return (
            "#include <iostream>\n#include <iterator>\n#include <string>\nint main() {\n"
            "  std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());\n"
            "  std::cout << in.size() << std::endl;\n}\n"
        )
    if lang == "javascript":
        return "const input = require('fs').readFileSync(0, 'utf8');\nconsole.log(input.length);\n"
    return "import sys\nprint(len(sys.stdin.read()))\n"


def _code_probes(task: Task, p: Probes) -> None:
    from rlvr.envs.python_code import noop_program

    lang = _language(task)
    p.noop["stub"] = _fence(lang, noop_program(task, lang))
    if lang == "python":
        p.noop["pass"] = _fence(lang, "pass\n")
    if task.entry_point and lang == "python":
        p.exploit.update({k: _fence(lang, v) for k, v in _function_exploits(task).items()})
    else:
        p.exploit.update({k: _fence(lang, v) for k, v in _stdio_exploits(task, lang).items()})
    p.wrong = _fence(lang, _wrong_program(task, lang))


def _wrong_value(right: str) -> str:
    """A committed answer that differs from `right`: a number moved by one, else text."""
    try:
        n = float(right.replace(",", ""))
    except ValueError:
        return "none of these" if right.strip().lower() != "none of these" else "all of these"
    return str(int(n) + 1) if n == int(n) else str(n + 1)


def _answer_probes(task: Task, right: str, p: Probes) -> None:
    wrong = _wrong_value(right)
    p.noop["non_answer"] = "<answer>I don't know.</answer>"
    p.noop["empty_box"] = "The answer is \\boxed{}"
    boxed = p.reference is not None and "\\boxed{" in p.reference  # the form the prompt asks for
    p.wrong = f"The answer is \\boxed{{{wrong}}}." if boxed else f"<answer>{wrong}</answer>"
    p.exploit["spray_tags"] = f"<answer>{wrong}</answer>\n<answer>{right}</answer>"
    p.exploit["spray_one"] = f"<answer>{wrong} or {right}</answer>"
    p.exploit["spray_boxed"] = f"The answer is \\boxed{{{wrong}, {right}}}."
    p.exploit["echo_prompt"] = f"<answer>{task.prompt}</answer>"


def _domain_probes(task: Task, p: Probes) -> None:
    from rlvr.envs.python_code import PythonFunctionEnv
    from rlvr.rewards.extract import answer_tags

    cls = env_class(task.domain)
    env = env_name(task.domain)
    fmt = task.tests.get("format")
    if isinstance(cls, type) and issubclass(cls, PythonFunctionEnv):
        _code_probes(task, p)
    elif fmt == "answer" and "answer" in task.tests:  # math
        _answer_probes(task, str(task.tests["answer"]), p)
    elif env == "reasoning" and p.reference and answer_tags(p.reference):
        _answer_probes(task, answer_tags(p.reference)[-1].strip(), p)
    elif fmt == "json" and "expected" in task.tests:
        expected = json.dumps(task.tests["expected"], ensure_ascii=False)
        p.noop["empty_object"] = "<answer>{}</answer>"
        p.wrong = "<answer>{}</answer>"
        p.exploit["spray_tags"] = f"<answer>{{}}</answer>\n<answer>{expected}</answer>"
        p.exploit["echo_prompt"] = f"<answer>{json.dumps({'text': task.prompt})}</answer>"
    elif fmt == "mutants":
        p.noop["no_test"] = _fence("python", "def helper():\n    return 1\n")
        p.exploit["assert_true"] = _fence("python", "def test_nothing():\n    assert True\n")
    elif env == "itops":
        p.noop["no_commands"] = "The system looks fine to me; nothing needs to change."
        p.noop["read_only"] = "```bash\nls /etc\ndf -h\nsystemctl status sshd\n```"
        p.noop["exit"] = "```bash\nexit\n```"
    elif env == "trading":
        p.noop["done"] = '{"tool": "done"}'
        p.noop["look_then_stop"] = '{"tool": "get_account"}\n{"tool": "done"}'
    elif env == "repository":
        p.noop["empty_diff"] = "```diff\n```"


def probe_replies(task: Task) -> Probes:
    """The task's probe replies: its reference, an empty and a prose reply, the domain's
    do-nothing replies and exploits, and those its environment class adds."""
    p = Probes(reference=reference_reply(task), noop={"empty": "", "prose": _PROSE})
    _domain_probes(task, p)
    own = getattr(env_class(task.domain), "probe_replies", None)
    if callable(own):
        p.exploit.update(own(task))
    return p


FULL = 1.0 - 1e-9
UNFORMATTED = ("empty", "prose")
"""Do-nothing replies held to 0 whatever the reward; the others (an empty object in answer
tags, a stub program, ...) follow the domain's form, which a run may pay for
(`reward.terms: format`), and are held to what a committed wrong answer earns."""


def probe_task(task: Task, score: Score, own_tests: Score | None = None) -> TaskVerdict:
    """Score each probe reply with `score` (the run's scoring of one reply) and name each
    failure: the reference short of full completion on the task's own tests (scored by
    `own_tests`, default `score`: tests drawn from the reference would pass it whatever
    it does), an empty or prose reply above 0, a do-nothing reply in the domain's form or
    an exploit above the committed wrong answer (at least 0)."""
    p = probe_replies(task)
    scores: dict[str, float] = {}
    problems: list[str] = []

    def total(name: str, reply: str) -> float:
        r = score(task, reply)
        scores[name] = round(r.total, 6) if r is not None else 0.0
        return scores[name]

    if p.reference is not None:
        r = (own_tests or score)(task, p.reference)
        completion = r.components.get("completion", r.total) if r is not None else 0.0
        scores["reference"] = round(completion, 6)
        if completion < FULL:
            problems.append(f"the reference earns completion {completion:.3f}, not full credit (1)")
    bar = max(0.0, total("wrong", p.wrong)) if p.wrong is not None else 0.0
    for name, reply in p.noop.items():
        got = total(f"noop:{name}", reply)
        if name in UNFORMATTED and got > 1e-9:
            problems.append(f"a reply doing nothing ({name}) earns {got:.3f} (at most 0 allowed)")
        elif name not in UNFORMATTED and got > bar + 1e-9:
            problems.append(f"a reply doing nothing ({name}) earns {got:.3f}, more than a wrong answer ({bar:.3f})")
    for name, reply in p.exploit.items():
        got = total(f"exploit:{name}", reply)
        if got > bar + 1e-9:
            problems.append(f"the exploit {name} earns {got:.3f}, more than a wrong answer ({bar:.3f})")
    return TaskVerdict(task.id, task.domain, scores, tuple(problems))


@functools.cache
def scoring_code_digest() -> str:
    """SHA-256 of the source of the packages that judge a reply (rlvr's envs, rewards,
    sandbox and tasks): an edit to any of them checks every task again."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for pkg in ("envs", "rewards", "sandbox", "tasks"):
        for path in sorted((root / pkg).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def check_salt(cfg: RunConfig) -> str:
    """What besides a task can change its verdict: the probe set, the code that scores
    (`scoring_code_digest`), the reward settings, the sandbox's limits and the generation
    budget where a `length` term pays by it (the seed does not: the check always draws
    hidden tests as seed 0, step 0)."""
    parts: dict[str, Any] = {
        "probes": PROBES_VERSION,
        "code": scoring_code_digest(),
        "reward": cfg.reward.model_dump(mode="json"),
        "sandbox": cfg.sandbox.model_dump(mode="json", include={"timeout_s", "memory_mb", "test_isolation", "cpus"}),
    }
    if any(t.name == "length" for t in cfg.reward.terms):
        parts["max_new_tokens"] = cfg.generation.max_new_tokens
    return json.dumps(parts, sort_keys=True)


def check_task_set(
    tasks: list[Task], cfg: RunConfig, *, cache: VerdictCache | None = None, refresh: bool = False, workers: int = 4
) -> CheckReport:
    """Every task's verdict under `cfg`'s reward, each reply scored by `score_completion`
    as training scores it (hidden tests as drawn at seed 0, step 0; the reference on the
    task's own tests); cached by content. Tasks of environments with `task_check = False`
    are left out of the report."""
    from rlvr.envs.scoring import score_completion

    fixed = cfg.model_copy(update={"seed": 0})
    undrawn = fixed.model_copy(update={"reward": cfg.reward.model_copy(update={"hidden_tests": 0})})

    def score(task: Task, reply: str) -> RewardBreakdown | None:
        return score_completion(task, reply, fixed).reward

    def own_tests(task: Task, reply: str) -> RewardBreakdown | None:
        # a reference that ran out of time on a busy machine is run again (twice at most)
        # before it counts against the task: a quarantine should name the task, not the load
        for _ in range(3):
            traj = score_completion(task, reply, undrawn)
            timed_out = traj.execution is not None and traj.execution.status is RunStatus.TIMEOUT
            if not timed_out:
                break
        return traj.reward

    tasks = [t for t in tasks if getattr(env_class(t.domain), "task_check", True)]
    return check_tasks(
        tasks,
        lambda t: probe_task(t, score, own_tests),
        salt=check_salt(cfg),
        cache=cache,
        refresh=refresh,
        workers=workers,
    )
