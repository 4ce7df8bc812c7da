import json
from collections import Counter
from pathlib import Path

import pytest

from rlvr.curriculum import Curriculum
from rlvr.envs.base import run_sync
from rlvr.tasks import TaskLoadError, load_tasks, split_tasks
from rlvr.tasks.generators.pyfuncs import DATA, build_tasks
from rlvr.types import Task


def test_bundled_set_size_and_fields() -> None:
    tasks = load_tasks("bundled:python_functions")
    assert len(tasks) >= 300
    assert {t.domain for t in tasks} == {"python"}
    assert set(Counter(t.difficulty for t in tasks)) == {1, 2, 3}
    assert all(t.entry_point and t.tests["tests"] for t in tasks)


def test_bundled_file_matches_generator() -> None:
    lines = [json.loads(line) for line in DATA.read_text().splitlines()]
    assert lines == [t.to_dict() for t in build_tasks()]


def test_split_is_deterministic_and_disjoint() -> None:
    tasks = load_tasks("bundled:python_functions")
    tr, ev = split_tasks(tasks, 0.2)
    tr2, ev2 = split_tasks(list(reversed(tasks)), 0.2)
    assert [t.id for t in tr] == [t.id for t in tr2] and [t.id for t in ev] == [t.id for t in ev2]
    assert not {t.id for t in tr} & {t.id for t in ev}
    assert 0.12 < len(ev) / len(tasks) < 0.28


def test_a_set_that_ships_its_own_split_keeps_it() -> None:
    """metadata.split (held-out repositories) wins over the id hash, whatever eval_fraction."""
    tasks = [Task(id=f"r{i}/t", domain="python", prompt="p") for i in range(40)]
    fixed = [Task(id=f"held/{i}", domain="python", prompt="p", metadata={"split": "eval"}) for i in range(3)]
    kept = [Task(id=f"kept/{i}", domain="python", prompt="p", metadata={"split": "train"}) for i in range(3)]
    tr, ev = split_tasks(tasks + fixed + kept, 0.5)
    assert {t.id for t in fixed} <= {t.id for t in ev} and {t.id for t in kept} <= {t.id for t in tr}
    hashed = {t.id for t in ev} - {t.id for t in fixed}
    assert hashed == {t.id for t in split_tasks(tasks, 0.5)[1]}  # the others split as before
    bad = Task(id="x", domain="python", prompt="p", metadata={"split": "test"})
    with pytest.raises(TaskLoadError, match=r"task x: field 'metadata.split' must be 'train' or 'eval', got 'test'"):
        split_tasks([bad], 0.2)


def test_difficulty_filter() -> None:
    tasks = load_tasks("bundled:python_functions", min_difficulty=2, max_difficulty=2)
    assert tasks and all(t.difficulty == 2 for t in tasks)


def test_loader_errors_name_file_line_and_field(tmp_path: Path) -> None:
    good = {"id": "a", "domain": "python", "prompt": "p"}
    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(TaskLoadError, match=r"t.jsonl:2: not valid JSON"):
        load_tasks(str(f))
    f.write_text(json.dumps(good) + "\n" + json.dumps({**good, "id": "b", "prompt": ""}) + "\n")
    with pytest.raises(TaskLoadError, match=r"t.jsonl:2: .*'prompt'"):
        load_tasks(str(f))
    f.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n")
    with pytest.raises(TaskLoadError, match=r"t.jsonl:2: field 'id': 'a' repeats line 1"):
        load_tasks(str(f))
    with pytest.raises(TaskLoadError, match="not found"):
        load_tasks(str(tmp_path / "none.jsonl"))
    sets = (
        "code_repair, data_analysis, humaneval, itops, json_extract, math_word, programs_cpp, programs_javascript, "
        "python_functions, reasoning_gym, repos, repository, test_writing, test_writing_repair, trading"
    )
    with pytest.raises(TaskLoadError, match=f"bundled: {sets}"):
        load_tasks("bundled:nope")


def test_sampler_is_deterministic_and_resumable() -> None:
    tasks = load_tasks("bundled:python_functions")[:10]
    a = Curriculum(tasks, seed=1)
    first = [t.id for t in a.sample(7)]
    state = a.state_dict()
    rest = [t.id for t in a.sample(8)]  # crosses an epoch boundary
    b = Curriculum(tasks, seed=1)
    assert [t.id for t in b.sample(7)] == first
    c = Curriculum(tasks, seed=1)
    c.load_state_dict(state)
    assert [t.id for t in c.sample(8)] == rest
    assert len(set(first + rest[:3])) == 10  # every task once per epoch


@pytest.mark.regeneration
def test_bundled_math_and_json_sets_regenerate_identically_and_check_out() -> None:
    import json as _json

    from rlvr.envs import EnvSettings, make_env
    from rlvr.tasks.generators import jsongen, mathgen

    for gen in (mathgen, jsongen):
        lines = [_json.dumps(t.to_dict(), ensure_ascii=False, sort_keys=True) for t in gen.build_tasks()]
        assert gen.DATA.read_text().splitlines() == lines, f"{gen.DATA} is stale: run python -m {gen.__name__}"
    maths = load_tasks("bundled:math_word")
    assert {t.difficulty for t in maths} == {1, 2, 3} and len(maths) == 180
    for t in maths[::15]:  # the stated answer is accepted, a different one refused
        env = make_env("math", EnvSettings())
        run_sync(env.reset(t))
        assert run_sync(env.step(f"\\boxed{{{t.tests['answer']}}}")).reward.total == 1.0  # type: ignore[union-attr]
    for t in load_tasks("bundled:json_extract")[::10]:
        env = make_env("json", EnvSettings())
        run_sync(env.reset(t))
        reply = "<answer>" + _json.dumps(t.tests["expected"]) + "</answer>"
        assert run_sync(env.step(reply)).reward.total == 1.0  # type: ignore[union-attr]
        import jsonschema

        jsonschema.validate(t.tests["expected"], t.tests["schema"])


def test_parquet_and_datasets_loaders_and_mixing(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets import Dataset, DatasetDict

    rows = [
        {"id": "p/1", "domain": "math", "prompt": "1+1", "tests": json.dumps({"format": "answer", "answer": "2"})},
        {"id": "p/2", "domain": "math", "prompt": "2+2", "tests": json.dumps({"format": "answer", "answer": "4"})},
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet")
    tasks = load_tasks(str(tmp_path / "t.parquet"))
    assert [t.id for t in tasks] == ["p/1", "p/2"] and tasks[1].tests["answer"] == "4"
    DatasetDict({"train": Dataset.from_list(rows), "test": Dataset.from_list(rows[:1])}).save_to_disk(tmp_path / "ds")
    assert [t.id for t in load_tasks(f"hf:{tmp_path / 'ds'}:test")] == ["p/1"]
    assert len(load_tasks(str(tmp_path / "ds"))) == 2  # default split: train
    with pytest.raises(TaskLoadError, match="no split 'dev'; splits: train, test"):
        load_tasks(f"hf:{tmp_path / 'ds'}:dev")
    mixed = load_tasks(f"bundled:math_word+{tmp_path / 't.parquet'}")
    assert len(mixed) == 182 and {t.domain for t in mixed} == {"math"}
    with pytest.raises(TaskLoadError, match=r"t.parquet:row 0: field 'id': 'p/1' repeats row 0"):
        load_tasks(f"{tmp_path / 't.parquet'}+{tmp_path / 't.parquet'}")
    bad = [{**rows[0], "prompt": ""}]
    pq.write_table(pa.Table.from_pylist(bad), tmp_path / "bad.parquet")
    with pytest.raises(TaskLoadError, match=r"bad.parquet:row 0: .*'prompt'"):
        load_tasks(str(tmp_path / "bad.parquet"))
    (tmp_path / "broken.parquet").write_text("not parquet")
    with pytest.raises(TaskLoadError, match="not a readable Parquet file"):
        load_tasks(str(tmp_path / "broken.parquet"))


def test_eval_tasks_are_taken_in_turn_from_each_domain() -> None:
    from rlvr.tasks import pick_eval_tasks
    from rlvr.types import Task

    tasks = [Task(id=f"{d}/{i}", domain=d, prompt="p") for d in ("a", "b", "c") for i in range(3)]
    assert [t.id for t in pick_eval_tasks(tasks, 5)] == ["a/0", "b/0", "c/0", "a/1", "b/1"]
    assert pick_eval_tasks(tasks[:3], 2) == tasks[:2]  # one domain: the first n, as before
    assert pick_eval_tasks(tasks, None) == tasks and pick_eval_tasks(tasks, 50) == tasks


def test_no_constant_passes_every_visible_test_of_a_bundled_task() -> None:
    """A task whose visible tests all expect one value pays `return 0` in full (the
    policy learns it; issue 17): the generators show a test expecting something else
    (rlvr.tasks.generators.pyfuncs._no_constant_passes)."""
    from rlvr.rewards.answers import stdio_cases
    from rlvr.rewards.hacks import visible_cases

    for name in ("python_functions", "code_repair", "programs_cpp", "programs_javascript"):
        for t in load_tasks(f"bundled:{name}"):
            visible = [repr(e) for _, e in visible_cases(t.tests)] + [o.strip() for _, o in stdio_cases(t.tests)]
            assert len(set(visible)) > 1, (t.id, visible)


def test_a_drawer_is_named_by_the_tasks_metadata_and_an_unknown_one_is_one_clear_error() -> None:
    import random

    from rlvr.tasks.draws import DRAWERS, NoDrawer, draw_cases, register_drawer

    def draw(task: Task, arg: str, rng: random.Random, n: int) -> list[dict[str, str]]:
        assert arg == "arg"  # the text after the colon of metadata.draw
        return [{"stdin": f"{rng.randint(0, 3)}\n", "stdout": "x\n"} for _ in range(3 * n)]

    try:
        register_drawer("test_kind")(draw)
        with pytest.raises(ValueError, match="already registered"):
            register_drawer("test_kind")(lambda t, a, r, n: [])
        cases = {"format": "stdio", "cases": [{"stdin": "0\n", "stdout": "x\n"}]}
        task = Task(id="d/1", domain="python", prompt="p", tests=cases, metadata={"draw": "test_kind:arg"})
        got = draw_cases(task, random.Random(1), 2)
        assert got == draw_cases(task, random.Random(1), 2)  # the same generator state, the same cases
        stdins = [c["stdin"] for c in got]
        assert len(stdins) == len(set(stdins)) <= 4 and "0\n" not in stdins  # new, distinct, at most 2n
        assert draw_cases(Task(**{**task.__dict__, "metadata": {}}), random.Random(1), 2) == []
        with pytest.raises(NoDrawer, match=r"metadata.draw': no drawer 'nope' \(known: .*stdio_problem"):
            draw_cases(Task(**{**task.__dict__, "metadata": {"draw": "nope"}}), random.Random(1), 2)
    finally:
        DRAWERS.pop("test_kind", None)
