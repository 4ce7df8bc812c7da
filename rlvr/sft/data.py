"""The supervised stage's examples: conversations read from files, or a task set's
references rendered as the replies their environments check.

Every source gives `Example`s (messages, optional tool schemas, where it came from). A
row that is not a conversation is an error naming its file and line, never skipped: a
data file with a mistake should be fixed, not trained on in part. What is left out on
purpose (references that fail their own environment, examples over the length limit)
is counted and reported.

Sources (`sft.data`):
- a `.jsonl`/`.json` file: one object per line with `messages` (a list of {role,
  content}, `tool_calls` allowed on assistant turns, roles system/user/assistant/tool),
  an optional `tools` list; or TRL's prompt-completion shape (`prompt`, `completion`:
  text, or message lists). `rlvr export --format sft` writes this shape;
- a `.parquet` file with the same columns;
- a directory saved by `datasets` (`save_to_disk`; its `train` split if it has splits);
- `tasks`: the run's training tasks, each task's opening messages (the system prompt and
  the task, as an episode starts) and its reference reply (`rlvr.envs.reference_reply`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlvr.config import ConfigError
from rlvr.envs.base import EnvSettings, env_class, make_env, opening_messages, reference_reply, run_sync
from rlvr.types import Task

ROLES = ("system", "user", "assistant", "tool")
TASKS = "tasks"


@dataclass(frozen=True)
class Example:
    id: str  # where it came from: file:line, or the task's id
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    task_id: str | None = None  # a task reference's task
    domain: str | None = None

    @property
    def digest(self) -> str:
        """A hash of the conversation (what the held-out split and de-duplication use)."""
        blob = json.dumps([self.messages, self.tools], sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class Loaded:
    """The examples of every source, and what was left out of them, with why."""

    examples: list[Example] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)  # reason -> count
    by_source: dict[str, int] = field(default_factory=dict)  # source -> examples read

    def leave_out(self, why: str, n: int = 1) -> None:
        self.left_out[why] = self.left_out.get(why, 0) + n


def load_examples(
    sources: list[str],
    *,
    tasks: list[Task] | None = None,
    settings: EnvSettings | None = None,
    check_references: bool = True,
    max_turns: int = 1,
) -> Loaded:
    """Every source's examples, in the order given (duplicates kept: a source may weigh
    an example twice on purpose). `tasks`: what the `tasks` source renders (the run's
    training split); `settings`: the run's environments (system prompts, sandbox), used
    to render prompts and check references; `max_turns`: the run's turns per episode
    (rollout.max_turns), above 1 for references rendered as whole episodes."""
    out = Loaded()
    for source in sources:
        if source == TASKS:
            got = task_examples(
                tasks or [], settings or EnvSettings(), check=check_references, out=out, max_turns=max_turns
            )
        else:
            got = list(read_source(source))
        out.examples += got
        out.by_source[source] = out.by_source.get(source, 0) + len(got)
    return out


def check_sources(sources: list[str]) -> None:
    """There is a source, and every source names something readable (reads nothing: the
    CLI calls this before a model loads)."""
    if not sources:
        raise ConfigError("sft.data: name at least one source (a chat file, a datasets directory, or 'tasks')")
    for source in sources:
        if source == TASKS:
            continue
        path = Path(source)
        if not path.exists():
            raise ConfigError(
                f"sft.data: {source}: no such file or directory (or name '{TASKS}' for the task references)"
            )
        if not path.is_dir() and path.suffix not in (".parquet", ".jsonl", ".json"):
            raise ConfigError(f"sft.data: {source}: not a .jsonl, .json or .parquet file, nor a datasets directory")


def read_source(source: str) -> Iterable[Example]:
    """The examples of one file or directory (see the module's docstring)."""
    check_sources([source])
    path = Path(source)
    if path.is_dir():
        return _read_datasets_dir(path)
    if path.suffix == ".parquet":
        return _read_parquet(path)
    return _read_jsonl(path)


def _read_jsonl(path: Path) -> Iterable[Example]:
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ConfigError(f"sft.data: {where}: not JSON ({e.msg})") from None
            yield example_from_row(row, where)


def _read_parquet(path: Path) -> Iterable[Example]:
    import pyarrow.parquet as pq

    try:
        rows = pq.ParquetFile(path).read().to_pylist()
    except Exception as e:  # a file that is not Parquet, or truncated
        raise ConfigError(f"sft.data: {path}: not a readable Parquet file ({type(e).__name__}: {e})") from None
    for n, row in enumerate(rows, 1):
        yield example_from_row(row, f"{path}:row {n}")


def _read_datasets_dir(path: Path) -> Iterable[Example]:
    try:
        import datasets
    except ImportError:  # pragma: no cover - datasets is a dependency
        raise ConfigError(f"sft.data: {path}: reading a datasets directory needs the datasets package") from None
    try:
        data = datasets.load_from_disk(str(path))
    except Exception as e:
        raise ConfigError(f"sft.data: {path}: not a directory saved by datasets ({type(e).__name__}: {e})") from None
    if isinstance(data, datasets.DatasetDict):
        if "train" not in data:
            raise ConfigError(f"sft.data: {path}: a dataset with splits {sorted(data)} but no 'train' split")
        data = data["train"]
    for n, row in enumerate(data, 1):
        yield example_from_row(dict(row), f"{path}:row {n}")


def example_from_row(row: Any, where: str) -> Example:
    """One row as an example, or a ConfigError naming `where` and what is wrong."""
    if not isinstance(row, dict):
        raise ConfigError(f"sft.data: {where}: expected an object with 'messages', got {type(row).__name__}")
    if "messages" in row:
        messages = row["messages"]
    elif "prompt" in row and "completion" in row:
        messages = _as_messages(row["prompt"], "user", where) + _as_messages(row["completion"], "assistant", where)
    else:
        raise ConfigError(f"sft.data: {where}: no 'messages' (nor 'prompt' and 'completion') field")
    if not isinstance(messages, list) or not messages:
        raise ConfigError(f"sft.data: {where}: 'messages' must be a non-empty list")
    clean = [_message(m, where, i) for i, m in enumerate(messages, 1)]
    if not any(m["role"] == "assistant" for m in clean):
        raise ConfigError(f"sft.data: {where}: no assistant message to learn")
    if clean[0]["role"] == "assistant":
        raise ConfigError(f"sft.data: {where}: the first message is an assistant reply, with no prompt before it")
    tools = row.get("tools")
    if isinstance(tools, str):  # some writers store the schemas as JSON text
        try:
            tools = json.loads(tools)
        except json.JSONDecodeError:
            raise ConfigError(f"sft.data: {where}: 'tools' is text but not JSON") from None
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise ConfigError(f"sft.data: {where}: 'tools' must be a list of function schemas (objects)")
    task_id = row.get("task_id")
    return Example(where, clean, tools or None, task_id if isinstance(task_id, str) else None, row.get("domain"))


def _as_messages(value: Any, role: str, where: str) -> list[dict[str, Any]]:
    if isinstance(value, str):
        return [{"role": role, "content": value}]
    if isinstance(value, list):
        return list(value)
    raise ConfigError(f"sft.data: {where}: '{'prompt' if role == 'user' else 'completion'}' must be text or messages")


def _message(m: Any, where: str, i: int) -> dict[str, Any]:
    if not isinstance(m, dict):
        raise ConfigError(f"sft.data: {where}: message {i} is not an object")
    role = m.get("role")
    if role not in ROLES:
        raise ConfigError(f"sft.data: {where}: message {i}: role {role!r} is not one of {', '.join(ROLES)}")
    content = m.get("content")
    calls = m.get("tool_calls")
    if content is not None and not isinstance(content, str):
        raise ConfigError(f"sft.data: {where}: message {i}: content must be text, got {type(content).__name__}")
    if calls and role != "assistant":
        raise ConfigError(f"sft.data: {where}: message {i}: only an assistant message may carry tool_calls")
    if not content and not calls and role == "assistant":
        raise ConfigError(f"sft.data: {where}: message {i}: an assistant message with neither content nor tool_calls")
    out: dict[str, Any] = {"role": role, "content": content if content is not None else ""}
    if calls:
        out["tool_calls"] = calls
    for key in ("name", "tool_call_id"):
        if m.get(key) is not None:
            out[key] = m[key]
    return out


def task_examples(
    tasks: list[Task], settings: EnvSettings, *, check: bool, out: Loaded, max_turns: int = 1
) -> list[Example]:
    """Each task's opening messages and reference reply. Tasks without a reference are
    counted and left out; with `check`, so are references their environment does not
    pay in full (each runs as one episode, in the sandbox where it has code).

    Multi-turn (`max_turns` > 1), the reference is rendered as the whole episode the
    policy would have. An environment may split it into turns (`reference_turns(task)`:
    trading looks at the account and quotes first, then orders, so the order sizes
    follow from what the policy has seen; the repository agent, which has no one-reply
    reference, reads and edits each changed region, runs the tests and submits, one tool
    call a reply: rlvr.repos.reference); after each, the environment's answer (a
    tool's results, a shell's output) follows; an episode the reference leaves open is
    ended by the environment's `closing_reply` (`{"tool": "done"}`, a reply without
    commands), so the policy learns to stop as well as what to do. An environment's
    `reference_problem(messages)` may refuse a played episode it must not teach (the
    repository agent: one that names a file before an answer showed it), counted. The environment's
    turns are context, never trained. An environment's tool schemas (`tools`) go with
    its examples, rendered as a rollout renders them."""
    examples = []
    for task in tasks:
        cls = env_class(task.domain)
        split = getattr(cls, "reference_turns", None)
        reply = reference_reply(task)
        turns = (split(task) if callable(split) and max_turns > 1 else None) or ([reply] if reply else [])
        if not turns:
            episodic = callable(split) and max_turns == 1 and not task.reference
            out.leave_out(
                f"references played over turns, with rollout.max_turns 1 ({task.domain})"
                if episodic
                else f"tasks without a reference ({task.domain})"
            )
            continue
        reply = turns[0]
        closing = getattr(cls, "closing_reply", None) if max_turns > 1 else None
        if check or closing or len(turns) > 1:
            messages, total = _episode(task, turns, settings, closing, max_turns)
            if check and total < 1.0 - 1e-9:
                out.leave_out(f"references their environment does not pay in full ({task.domain})")
                continue
            judge = getattr(cls, "reference_problem", None)  # what a played episode must not teach
            if callable(judge) and (why := judge(messages)):
                out.leave_out(f"references {why} ({task.domain})")
                continue
        else:
            messages = [*opening_messages(task, settings), {"role": "assistant", "content": reply}]
        examples.append(Example(task.id, messages, getattr(cls, "tools", None), task.id, task.domain))
    return examples


def _episode(
    task: Task, turns: list[str], settings: EnvSettings, closing: str | None, max_turns: int
) -> tuple[list[dict[str, Any]], float]:
    """The reference's episode (its messages) and the reward it ends with."""
    env = make_env(task.domain, settings)
    messages: list[dict[str, Any]] = list(run_sync(env.reset(task)))
    replies = list(turns[:max_turns])
    result = None
    while replies:
        reply = replies.pop(0)
        if result is not None:
            messages += result.messages
        messages.append({"role": "assistant", "content": reply})
        result = run_sync(env.step(reply))
        if result.done or not result.messages:
            break
        if not replies and closing and sum(m["role"] == "assistant" for m in messages) < max_turns:
            replies.append(closing)
            closing = None
    return messages, (result.reward.total if result is not None and result.reward is not None else 0.0)


def split_held_out(examples: list[Example], share: float) -> tuple[list[Example], list[Example]]:
    """(train, held out): an example is held out when its digest falls below `share`, so
    the split of an example never depends on the others; at least one is held out when
    `share` > 0 and there are two or more. Equal conversations fall on the same side."""
    if share <= 0 or len(examples) < 2:
        return list(examples), []
    cut = int(share * 2**32)
    held = [e for e in examples if int(e.digest[:8], 16) < cut]
    if not held:
        lowest = min(examples, key=lambda e: e.digest)
        held = [e for e in examples if e.digest == lowest.digest]
    keep = {e.digest for e in held}
    train = [e for e in examples if e.digest not in keep]
    if not train:
        raise ConfigError(f"sft.held_out {share}: every example would be held out; lower it or add examples")
    return train, held
