"""The supervised stage's inputs: reading conversations (JSONL, Parquet, a datasets
directory, prompt-completion rows), one-line errors for bad rows, the held-out split,
the schedule of batches, the learning rate, and the keys a command never reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.config import ConfigError, load_config
from rlvr.config.run import check_command_keys
from rlvr.envs.base import EnvSettings, reference_reply
from rlvr.sft.data import Example, load_examples, split_held_out, task_examples
from rlvr.sft.plan import WINDOW, schedule
from rlvr.sft.trainer import lr_factor
from rlvr.types import Task

CHAT = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}


def write_jsonl(path: Path, rows: list[object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_jsonl_parquet_and_datasets_directories_read_alike(tmp_path: Path) -> None:
    import datasets
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [CHAT, {"prompt": "2+2?", "completion": "4"}]
    as_messages = [CHAT["messages"], [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]]
    jl = write_jsonl(tmp_path / "a.jsonl", rows)
    pq.write_table(pa.Table.from_pylist([{"messages": m} for m in as_messages]), tmp_path / "b.parquet")
    datasets.Dataset.from_list([{"messages": m} for m in as_messages]).save_to_disk(str(tmp_path / "ds"))
    for source in (jl, tmp_path / "b.parquet", tmp_path / "ds"):
        got = load_examples([str(source)])
        assert [e.messages for e in got.examples] == as_messages, source
        assert got.by_source == {str(source): 2}
    splits = datasets.DatasetDict({"train": datasets.Dataset.from_list([{"messages": as_messages[0]}])})
    splits.save_to_disk(str(tmp_path / "dd"))
    assert [e.messages for e in load_examples([str(tmp_path / "dd")]).examples] == [as_messages[0]]


def test_tool_calls_and_tools_pass_through(tmp_path: Path) -> None:
    call = {"type": "function", "function": {"name": "quote", "arguments": {"s": "X"}}}
    row = {
        "messages": [
            {"role": "user", "content": "price?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "content": "42", "tool_call_id": "1"},
            {"role": "assistant", "content": "42"},
        ],
        "tools": json.dumps([{"type": "function", "function": {"name": "quote"}}]),
    }
    (ex,) = load_examples([str(write_jsonl(tmp_path / "t.jsonl", [row]))]).examples
    assert ex.messages[1] == {"role": "assistant", "content": "", "tool_calls": [call]}
    assert ex.messages[2]["tool_call_id"] == "1"
    assert ex.tools == [{"type": "function", "function": {"name": "quote"}}]


@pytest.mark.parametrize(
    ("row", "says"),
    [
        ("not json", "a.jsonl:2: not JSON"),
        ({"text": "x"}, "a.jsonl:2: no 'messages'"),
        ({"messages": []}, "non-empty list"),
        ({"messages": [{"role": "user", "content": "x"}]}, "no assistant message"),
        ({"messages": [{"role": "bot", "content": "x"}]}, "message 1: role 'bot'"),
        ({"messages": [{"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}]}, "no prompt before"),
        ({"messages": [{"role": "user", "content": 3}, {"role": "assistant", "content": "y"}]}, "must be text"),
        ({"messages": [{"role": "user", "content": "x"}, {"role": "assistant"}]}, "neither content nor tool_calls"),
        ({**CHAT, "tools": "{oops"}, "'tools' is text but not JSON"),
    ],
)
def test_a_bad_row_is_one_line_naming_the_file_and_line(tmp_path: Path, row: object, says: str) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(CHAT) + "\n" + (row if isinstance(row, str) else json.dumps(row)) + "\n")
    with pytest.raises(ConfigError, match=r"sft\.data: ") as e:
        load_examples([str(path)])
    assert says in str(e.value) and "\n" not in str(e.value)


def test_sources_that_are_not_data_are_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no such file or directory .*'tasks'"):
        load_examples([str(tmp_path / "missing.jsonl")])
    (tmp_path / "x.csv").write_text("a,b\n")
    with pytest.raises(ConfigError, match=r"x\.csv: not a \.jsonl"):
        load_examples([str(tmp_path / "x.csv")])
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(ConfigError, match=r"bad\.parquet: not a readable Parquet file"):
        load_examples([str(tmp_path / "bad.parquet")])
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(ConfigError, match="not a directory saved by datasets"):
        load_examples([str(tmp_path / "empty_dir")])


def _examples(n: int) -> list[Example]:
    return [
        Example(f"e{i}", [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"}])
        for i in range(n)
    ]


def test_the_held_out_split_depends_on_each_example_alone() -> None:
    exs = _examples(400)
    train, held = split_held_out(exs, 0.1)
    assert len(train) + len(held) == 400 and 20 <= len(held) <= 60
    # adding examples never moves an old one across the split
    train2, held2 = split_held_out(exs + _examples(800)[400:], 0.1)
    assert {e.id for e in held} <= {e.id for e in held2}
    assert {e.id for e in train} <= {e.id for e in train2}
    # at least one is held out; none with share 0; duplicates fall on one side
    assert len(split_held_out(_examples(2), 0.01)[1]) == 1
    assert split_held_out(exs, 0.0) == (exs, [])
    dup = _examples(30) + _examples(30)
    tr, he = split_held_out(dup, 0.2)
    assert not {e.digest for e in tr} & {e.digest for e in he}


def test_the_schedule_covers_each_epoch_once_in_similar_lengths_and_is_fixed_by_the_seed() -> None:
    lengths = [(i * 37) % 500 + 10 for i in range(300)]
    plan = schedule(lengths, 8, seed=3, epochs=2, max_steps=None)
    per_epoch = -(-300 // 8)
    assert len(plan) == 2 * per_epoch
    for e in range(2):
        seen = sorted(i for b in plan[e * per_epoch : (e + 1) * per_epoch] for i in b)
        assert seen == list(range(300))
    assert plan == schedule(lengths, 8, seed=3, epochs=2, max_steps=None)
    assert plan != schedule(lengths, 8, seed=4, epochs=2, max_steps=None)
    assert plan[:per_epoch] != plan[per_epoch:]  # each epoch in its own order
    # batches hold similar lengths: the spread inside a batch is far below the data's
    spread = sum(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in plan) / len(plan)
    assert spread < 500 / WINDOW * 2
    assert schedule(lengths, 8, seed=3, epochs=5, max_steps=7) == plan[:7]
    assert schedule([], 8, seed=0, epochs=1, max_steps=None) == []


def test_learning_rate_schedules_hand_worked() -> None:
    # warm-up 2 of 10 steps: 1/2, 2/2, then constant
    assert [lr_factor(s, warmup=2, total=10, schedule="constant") for s in range(4)] == [0.5, 1.0, 1.0, 1.0]
    # linear from step 2: progress (s - 2) / 8 -> 1, 0.875, ..., the last step 0.125
    assert [lr_factor(s, warmup=2, total=10, schedule="linear") for s in (2, 3, 9)] == [1.0, 0.875, 0.125]
    # cosine without warm-up over 4 steps: 0.5 (1 + cos(pi s / 4))
    got = [lr_factor(s, warmup=0, total=4, schedule="cosine") for s in range(4)]
    assert got == pytest.approx([1.0, 0.8535534, 0.5, 0.1464466], abs=1e-7)


def test_task_references_render_through_the_task_prompt_and_are_checked() -> None:
    good = Task(id="j1", domain="json", prompt="Extract name.", tests={"format": "json", "expected": {"name": "Ada"}})
    # a reference its environment does not pay in full is left out and counted
    wrong = Task(
        id="j2", domain="json", prompt="Extract name.", tests={"format": "json", "expected": {"name": "Bo"}},
        reference='<answer>{"name": "Al"}</answer>',
    )  # fmt: skip
    math = Task(id="m1", domain="math", prompt="1+1?", tests={"format": "answer", "answer": "2"})
    assert reference_reply(good) == '<answer>{"name": "Ada"}</answer>'
    assert reference_reply(math) == "The answer is \\boxed{2}."
    settings = EnvSettings(system_prompt="Be exact.")
    from rlvr.sft.data import Loaded

    out = Loaded()
    got = task_examples([good, wrong, math], settings, check=True, out=out)
    assert [e.task_id for e in got] == ["j1", "m1"]
    assert got[0].messages == [
        {"role": "system", "content": "Be exact."},
        {"role": "user", "content": "Extract name."},
        {"role": "assistant", "content": '<answer>{"name": "Ada"}</answer>'},
    ]
    assert out.left_out == {"references their environment does not pay in full (json)": 1}
    unchecked = task_examples([wrong], settings, check=False, out=Loaded())
    assert [e.task_id for e in unchecked] == ["j2"]


def test_a_key_the_command_never_reads_is_an_error_naming_it() -> None:
    cfg = load_config(None, ["train.lr=1e-4", "algo.kl_coef=0.1"])
    with pytest.raises(ConfigError) as e:
        check_command_keys(cfg, "sft")
    assert "train.lr: set, but read only by rlvr train, not rlvr sft (rlvr sft reads sft.lr)" in str(e.value)
    assert "algo.kl_coef: set, but read only by rlvr train" in str(e.value)
    with pytest.raises(ConfigError, match=r"sft\.epochs: set, but read only by rlvr sft and rlvr rft, not rlvr train"):
        check_command_keys(load_config(None, ["sft.epochs=2"]), "train")
    check_command_keys(load_config(None, ["sft.epochs=2", "model.dtype=float32"]), "sft")
    # with the command line's overrides, only the keys given there count: one file may
    # serve rlvr sft and then rlvr train
    both = load_config(None, ["train.lr=1e-4", "sft.lr=1e-5"])
    check_command_keys(both, "sft", ["sft.lr=1e-5"])
    with pytest.raises(ConfigError, match=r"^train\.lr: set, but read only by rlvr train, not rlvr sft"):
        check_command_keys(both, "sft", ["train.lr=1e-4"])


def test_multi_turn_references_are_whole_episodes_that_end_as_the_environment_asks() -> None:
    from rlvr.envs.base import check_task
    from rlvr.sft.data import Loaded
    from rlvr.tasks import load_tasks

    (task,) = [t for t in load_tasks("bundled:itops", check=check_task)][:1]
    one = task_examples([task], EnvSettings(), check=True, out=Loaded(), max_turns=1)[0].messages
    assert [m["role"] for m in one] == ["user", "assistant"] and one[-1]["content"] == task.reference
    # the shell answers the reference's commands; a reply without commands then ends it
    out = Loaded()
    (ex,) = task_examples([task], EnvSettings(), check=True, out=out, max_turns=4)
    roles = [m["role"] for m in ex.messages]
    assert roles == ["user", "assistant", "user", "assistant"] and not out.left_out
    assert ex.messages[2]["content"].startswith("$ ") and "Continue with more commands" in ex.messages[2]["content"]
    assert ex.messages[3]["content"] == "The system is in the required state."


def test_a_trading_reference_looks_first_then_orders_on_what_it_saw() -> None:
    """Written as one reply, the plan's order sizes would come from an account the prompt
    does not show; as turns, the account's answer comes before the order."""
    from rlvr.envs.base import check_task
    from rlvr.envs.trading import TradingEnv
    from rlvr.sft.data import Loaded
    from rlvr.tasks import load_tasks

    tasks = load_tasks("bundled:trading", check=check_task)
    task = next(t for t in tasks if (t.reference or "").startswith('{"tool": "get_account"}\n{"tool": "place_order"'))
    looks, acts = TradingEnv.reference_turns(task) or ["", ""]
    assert looks == '{"tool": "get_account"}' and acts.endswith('{"tool": "done"}')
    (ex,) = task_examples([task], EnvSettings(), check=True, out=Loaded(), max_turns=4)
    assert [m["role"] for m in ex.messages] == ["user", "assistant", "user", "assistant"]
    assert ex.messages[2]["content"].startswith('Tool results:\n- {"tool": "get_account"} -> {"cash": ')
    assert ex.messages[3]["content"] == acts
    # one turn: the plan as one reply, as a single-turn run would answer
    (one,) = task_examples([task], EnvSettings(), check=True, out=Loaded(), max_turns=1)
    assert one.messages[-1]["content"] == task.reference
    # every bundled trading reference still earns the full reward played over turns
    out = Loaded()
    assert len(task_examples(tasks, EnvSettings(), check=True, out=out, max_turns=4)) == len(tasks) and not out.left_out
