"""Every user mistake gets a one-line answer before any work starts (issue 19): each row
runs the real `rlvr` command as a subprocess and checks the exit code, that stderr is a
single `rlvr: error: ...` line naming the problem, that no traceback is shown, and that
nothing is left behind (no run directory for a run that never started)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

GOOD_TASK = {
    "id": "t/0",
    "domain": "python",
    "prompt": "Write f.",
    "tests": {"format": "assert", "tests": ["assert f(1) == 2"]},
    "entry_point": "f",
    # with a reference, drawn tests stop a table of the one visible case from passing:
    # without one, the task check before training quarantines every such task
    "reference": "def f(x):\n    return x + 1\n",
}
BASE = [
    "model.name_or_path=tiny-random",
    "train.steps=1",
    "generation.max_new_tokens=4",
    "algo.group_size=2",
    "train.prompts_per_step=1",
    "output_dir=runs",
    "name=r",
]


def _task(**changes: object) -> dict[str, object]:
    task = {**GOOD_TASK, **changes}
    return {k: v for k, v in task.items() if v is not None}


def _files(root: Path) -> None:
    """The inputs the rows below refer to, all in the working directory."""

    def jsonl(name: str, *tasks: dict[str, object]) -> None:
        (root / name).write_text("".join(json.dumps(t) + "\n" for t in tasks))

    many = [_task(id=f"t/{i}") for i in range(40)]
    jsonl("good.jsonl", *many)
    jsonl("no_tests.jsonl", *many[:5], _task(id="t/x", tests=None))
    jsonl("bad_format.jsonl", _task(tests={"format": "asserts", "tests": []}), *many[1:])
    jsonl("bad_domain.jsonl", *many[:3], _task(id="t/y", domain="pyhton"))
    jsonl("bad_assert.jsonl", _task(tests={"format": "assert", "tests": ["assert f(1) =="]}))
    jsonl("no_prompt.jsonl", _task(prompt=""))
    jsonl("dupes.jsonl", _task(), _task())
    jsonl("tiny.jsonl", *many[:2])
    jsonl("math_bad.jsonl", _task(domain="math", tests={"format": "answer"}))
    (root / "broken.jsonl").write_text(json.dumps(GOOD_TASK) + "\n{not json\n")
    (root / "cfg.yaml").write_text("tasks:\n  source: good.jsonl\n")
    (root / "list.yaml").write_text("- a\n- b\n")
    (root / "bad.yaml").write_text("tasks: [unclosed\n")
    (root / "unknown_key.yaml").write_text("trian:\n  steps: 3\n")
    (root / "nomodel").mkdir()
    (root / "prog.py").write_text("def f(x):\n    return x + 1\n")
    (root / "tests.json").write_text(json.dumps({"format": "assert", "tests": ["assert f(1) == 2"]}))
    (root / "tests_bad.json").write_text("{nope")
    (root / "tests_fmt.json").write_text(json.dumps({"format": "unit", "tests": []}))
    (root / "reply.txt").write_text("```python\ndef f(x):\n    return x + 1\n```\n")
    (root / "plugin_broken.py").write_text("import does_not_exist_anywhere\n")
    (root / "occupied" / "r").mkdir(parents=True)
    (root / "occupied" / "r" / "keep.txt").write_text("mine")


T = ["train", "cfg.yaml", *BASE]
CASES: list[tuple[str, list[str], str]] = [
    # config file and keys
    ("config missing", ["train", "nope.yaml"], "config file not found: nope.yaml"),
    ("config not YAML", ["train", "bad.yaml"], "bad.yaml: not valid YAML"),
    ("config not a mapping", ["train", "list.yaml"], "the top level must be a mapping"),
    ("unknown key in file", ["train", "unknown_key.yaml"], "trian: unknown key; allowed here:"),
    ("unknown override", [*T, "train.stpes=3"], "unknown config key 'train.stpes'"),
    ("override without =", [*T, "steps"], "override 'steps' is not of the form key.path=value"),
    ("override of a section", [*T, "train=3"], "train: Input should be a valid dictionary"),
    ("wrong type", [*T, "train.steps=many"], "train.steps: Input should be a valid integer"),
    ("out of range", [*T, "train.lr=-1"], "train.lr: Input should be greater than 0"),
    ("unknown estimator", [*T, "algo.advantage=ppo"], "algo.advantage: 'ppo' is unknown; valid: drgrpo, gae, grpo"),
    ("difficulty range", [*T, "tasks.min_difficulty=3", "tasks.max_difficulty=2"], "min_difficulty (3) is above"),
    ("inert value-head key", [*T, "algo.gamma=0.9"], "algo.gamma: set, but used only with an advantage estimator that has a value head (e.g. 'gae')"),
    ("inert staleness", [*T, "rollout.max_staleness=2"], "rollout.max_staleness: set, but used only with"),
    ("inert is_cap", [*T, "algo.is_cap=3"], "algo.is_cap: set, but used only with algo.importance"),
    ("no config at all", ["train", *BASE], "a config file is needed"),
    ("config twice", ["train", "cfg.yaml", "--config", "cfg.yaml", *BASE], "give the config once"),
    # tasks
    ("unknown bundled set", [*T, "tasks.source=bundled:pyfuncs"], "no bundled task set 'pyfuncs'; bundled: code_repair"),
    ("task file missing", [*T, "tasks.source=gone.jsonl"], "task file not found: gone.jsonl"),
    ("task line not JSON", [*T, "tasks.source=broken.jsonl"], "broken.jsonl:2: not valid JSON"),
    ("task without tests", [*T, "tasks.source=no_tests.jsonl"], "no_tests.jsonl:6: task t/x: field 'tests.format'"),
    ("unknown tests.format", [*T, "tasks.source=bad_format.jsonl"], "bad_format.jsonl:1: task t/0: field 'tests.format'"),
    ("unknown domain", [*T, "tasks.source=bad_domain.jsonl"], "bad_domain.jsonl:4: task t/y: field 'domain': no environment for domain 'pyhton'"),
    ("test not Python", [*T, "tasks.source=bad_assert.jsonl"], "bad_assert.jsonl:1: task t/0: field 'tests': test 0: not valid Python"),
    ("empty prompt", [*T, "tasks.source=no_prompt.jsonl"], "no_prompt.jsonl:1: Task: field 'prompt' must be a non-empty string"),
    ("duplicate ids", [*T, "tasks.source=dupes.jsonl"], "dupes.jsonl:2: field 'id': 't/0' repeats line 1"),
    ("math without answer", [*T, "tasks.source=math_bad.jsonl"], "math_bad.jsonl:1: task t/0: field 'tests': math tasks need"),
    ("too few to evaluate", [*T, "tasks.source=tiny.jsonl"], "leave none held out for evaluation"),
    ("difficulty filter empty", [*T, "tasks.min_difficulty=3"], "no tasks with difficulty in [3, 3]"),
    # model, device, plugins, run directory
    ("model path missing", [*T, "model.name_or_path=./no/such/model"], "is neither 'smollm2-135m-instruct'"),
    ("model dir without config", [*T, "model.name_or_path=nomodel"], "nomodel has no config.json"),
    ("hub id not cached", [*T, "model.name_or_path=Qwen/Qwen2.5-0.5B-Instruct"], "is not in the local Hugging Face cache"),
    ("no GPU", [*T, "model.device=cuda"], "model.device is 'cuda' but torch sees no CUDA device"),
    ("plugin missing", [*T, "plugins=[no_such_plugin_mod]"], "plugins: cannot import 'no_such_plugin_mod'"),
    ("plugin broken", [*T, "plugins=[plugin_broken.py]"], "plugins: cannot import 'plugin_broken.py': ModuleNotFoundError"),
    ("run dir taken", [*T, "output_dir=occupied"], "run directory occupied/r is not empty; pass --resume"),
    ("resume nothing", [*T, "--resume"], "--resume: no checkpoint in runs/r/checkpoints"),
    # eval
    ("eval checkpoint missing", ["eval", "cfg.yaml", "--checkpoint", "runs/none", *BASE], "--checkpoint runs/none: no such directory"),
    ("eval checkpoint empty", ["eval", "cfg.yaml", "--checkpoint", "nomodel", *BASE], "--checkpoint nomodel: no model found"),
    # score
    ("score task file missing", ["score", "gone.jsonl", "reply.txt"], "task file not found: gone.jsonl"),
    ("score reply missing", ["score", "tiny.jsonl", "gone.txt", "--task-id", "t/0"], "completion file not found: gone.txt"),
    ("score several tasks", ["score", "tiny.jsonl", "reply.txt"], "tiny.jsonl has 2 tasks; choose one with --task-id"),
    ("score unknown id", ["score", "tiny.jsonl", "reply.txt", "--task-id", "t/9"], "no task with id 't/9'"),
    ("score unknown domain", ["score", "bad_domain.jsonl", "reply.txt", "--task-id", "t/y"], "field 'domain': no environment"),
    # sandbox run
    ("negative timeout", ["sandbox", "run", "prog.py", "--tests", "tests.json", "--timeout", "-1"], "--timeout must be a positive"),
    ("negative memory", ["sandbox", "run", "prog.py", "--tests", "tests.json", "--memory-mb", "-5"], "--memory-mb must be at least 32"),
    ("tests not JSON", ["sandbox", "run", "prog.py", "--tests", "tests_bad.json"], "tests_bad.json: not valid JSON"),
    ("unknown test format", ["sandbox", "run", "prog.py", "--tests", "tests_fmt.json"], "unknown test format 'unit'"),
    ("program missing", ["sandbox", "run", "gone.py", "--tests", "tests.json"], "file not found: gone.py"),
]  # fmt: skip


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli-errors")
    _files(root)
    return root


def _rlvr(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HOME": str(cwd / "hf-home"), "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(
        [sys.executable, "-m", "rlvr.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if "__pycache__" not in p.parts}


@pytest.mark.parametrize(("args", "message"), [(a, m) for _, a, m in CASES], ids=[c[0] for c in CASES])
def test_bad_input_gets_one_clear_line(workdir: Path, args: list[str], message: str) -> None:
    before = _tree(workdir)
    r = _rlvr(args, workdir)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert lines and lines[0].startswith("rlvr: error: "), r.stderr
    assert message in r.stderr, r.stderr
    # one message: a config error lists each bad key on its own indented line
    assert all(x.startswith("  ") for x in lines[1:]), r.stderr
    assert _tree(workdir) == before  # nothing left behind


def test_the_table_covers_thirty_mistakes() -> None:
    assert len(CASES) >= 30 and len({c[0] for c in CASES}) == len(CASES)


def test_mistakes_in_the_config_or_tasks_are_answered_before_torch_is_imported(workdir: Path) -> None:
    """A bad task file or key costs about a second: the checks run before the training
    stack (torch, transformers) is imported. Also `rlvr score` and `rlvr sandbox run`
    never import it. (An algorithm name that is not rlvr's own is looked up in the
    registries plugins add to, which do import it.)"""
    rows = [
        ["train", "cfg.yaml", *BASE, "tasks.source=broken.jsonl"],
        ["train", "cfg.yaml", *BASE, "tasks.source=dupes.jsonl"],
        ["train", "cfg.yaml", *BASE, "model.name_or_path=./no/such/model"],
        ["train", "cfg.yaml", *BASE, "train.lr=-1"],
        ["eval", "cfg.yaml", *BASE, "tasks.source=gone.jsonl"],
        ["score", "tiny.jsonl", "reply.txt", "--task-id", "t/0"],
        ["sandbox", "run", "prog.py", "--tests", "tests.json"],
    ]
    code = (
        "import json, sys\nfrom rlvr.cli import main\n"
        "codes = [main(argv) for argv in json.loads(sys.argv[1])]\n"
        "print(json.dumps({'codes': codes, 'torch': 'torch' in sys.modules}))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, json.dumps(rows)], cwd=workdir, capture_output=True, text=True, timeout=120
    )
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {"codes": [2, 2, 2, 2, 2, 0, 0], "torch": False}, (out, r.stderr)
