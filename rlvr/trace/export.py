"""A run's trajectories as reward-model / DPO data or as SFT data (the `rlvr export`
command: rlvr.cli.export).

preference: within each group (one step, one prompt), every ordered pair (higher reward,
lower reward) whose margin is > 0 (and >= --min-margin), largest margins first, in TRL's
conversational preference layout (prompt / chosen / rejected as lists of messages) plus
margin, both rewards, both reward breakdowns, task_id, domain, step. A trajectory flagged
by a hack signature is never `chosen` (it may be `rejected`); an episode that failed
(status "error": no reward of its own) is left out of both sides.

sft: per task, the best passing trajectory of the selected steps (highest reward, ties:
earliest step), as `messages` (the prompt's system and user turns, then the reply that
was judged). Passing: every test passed, or, for domains without tests, the completion
component is 1. Flagged and failed episodes are never taken.

The output's format follows the file's extension: .jsonl or .parquet. docs/export.md has
the columns and which TRL trainers read them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

FORMATS = ("preference", "sft")
COLUMNS = [
    "step",
    "trained",
    "task_id",
    "domain",
    "group_id",
    "sample",
    "status",
    "turns",
    "reward",
    "reward_components",
    "reward_flags",
    "exec_passed",
    "exec_total",
]
_EPS = 1e-9  # rewards are sums of floats: 0.7 - 0.4 must count as a margin of 0.3


@dataclass
class Summary:
    """What an export wrote and what it left out, for the one-line report."""

    fmt: str
    rows: int = 0
    groups: int = 0  # preference: groups seen; sft: tasks seen
    used: int = 0  # groups (tasks) that gave at least one row
    skipped: Counter[str] = field(default_factory=Counter)

    def line(self, out: str) -> str:
        unit = "groups" if self.fmt == "preference" else "tasks"
        what = "preference pairs" if self.fmt == "preference" else "SFT rows"
        text = f"wrote {self.rows} {what} to {out} from {self.used} of {self.groups} {unit}"
        if self.skipped:
            text += " (skipped: " + ", ".join(f"{why}: {n}" for why, n in sorted(self.skipped.items())) + ")"
        return text


def parse_steps(text: str | None) -> tuple[int | None, int | None] | None:
    """--steps: "A:B" (both included), "A:", ":B" or "N" -> (first, last); None: every step."""
    from rlvr.config.base import ConfigError

    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d*)\s*(:?)\s*(\d*)\s*", text)
    if not m or (not m.group(2) and not m.group(1)) or (not m.group(2) and m.group(3)):
        raise ConfigError(f"--steps {text!r}: expected A:B, A:, :B or N (step numbers)")
    first = int(m.group(1)) if m.group(1) else None
    last = int(m.group(3)) if m.group(3) else None
    if not m.group(2):
        last = first
    if first is not None and last is not None and first > last:
        raise ConfigError(f"--steps {text!r}: the first step is after the last")
    return first, last


def output_kind(out: str) -> str:
    from rlvr.config.base import ConfigError

    for kind in ("jsonl", "parquet"):
        if out.lower().endswith("." + kind):
            return kind
    raise ConfigError(f"--out {out}: the file name must end in .jsonl or .parquet (the output format)")


# ---- reading and selecting -----------------------------------------------------------


def export(
    uri: str,
    fmt: str,
    out: str,
    *,
    min_margin: float | None = None,
    max_pairs_per_group: int | None = None,
    steps: tuple[int | None, int | None] | None = None,
    trained_only: bool = False,
) -> Summary:
    """Write `fmt` ("preference" or "sft") rows from the store at `uri` to `out`."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    kind = output_kind(out)
    rows, summary = store_rows(
        uri, fmt, min_margin=min_margin, max_pairs_per_group=max_pairs_per_group, steps=steps, trained_only=trained_only
    )
    _write(rows, out, kind, fmt)
    return summary


def store_rows(
    uri: str,
    fmt: str,
    *,
    min_margin: float | None = None,
    max_pairs_per_group: int | None = None,
    steps: tuple[int | None, int | None] | None = None,
    trained_only: bool = False,
) -> tuple[list[dict[str, Any]], Summary]:
    """The `fmt` rows of the store at `uri` (what `export` writes; `rlvr feedback import
    --from-run` reads the preference rows), and what was left out."""
    from rlvr.trace.parquet import StoreError, TraceStore

    summary = Summary(fmt)
    rows: list[dict[str, Any]] = []
    best: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {}  # sft: task -> (rank, row)
    tasks: set[str] = set()
    seen = 0
    for table in _parts(uri, steps):
        seen += table.num_rows
        trajs = table.to_pylist()
        if trained_only:
            summary.skipped["dropped trajectories"] += sum(not t["trained"] for t in trajs)
            trajs = [t for t in trajs if t["trained"]]
        if fmt == "preference":
            for group in _groups(trajs):
                summary.groups += 1
                pairs = group_pairs(group, min_margin, max_pairs_per_group, summary.skipped)
                summary.used += bool(pairs)
                if not pairs:
                    summary.skipped["groups without a pair"] += 1
                rows.extend(pairs)
        else:
            for t in trajs:
                tasks.add(t["task_id"])
                why = sft_refusal(t)
                if why:
                    summary.skipped[why] += 1
                    continue
                rank = (-t["reward"], t["step"], t["group_id"], t["sample"])
                if t["task_id"] not in best or rank < best[t["task_id"]][0]:
                    best[t["task_id"]] = (rank, t)
    if not seen:
        if steps is None:
            raise StoreError(f"{uri}: no trajectories yet")
        have = TraceStore.open(uri).steps()
        shown = f"{have[0]}..{have[-1]}" if have else "none yet"
        raise StoreError(f"{uri}: no trajectories in steps {_steps_text(steps)} (steps: {shown})")
    if fmt == "sft":
        rows = [sft_row(t) for _, (_, t) in sorted(best.items())]
        summary.groups, summary.used = len(tasks), len(rows)
        if len(tasks) > len(rows):
            summary.skipped["tasks without a passing reply"] += len(tasks) - len(rows)
    summary.rows = len(rows)
    return rows, summary


def _steps_text(steps: tuple[int | None, int | None]) -> str:
    a, b = steps
    return str(a) if a == b else f"{'' if a is None else a}:{'' if b is None else b}"


def _parts(uri: str, steps: tuple[int | None, int | None] | None) -> Any:
    """The trajectories table one part (one step) at a time, only the columns needed."""
    from rlvr.trace.parquet import TraceStore, read_part

    store = TraceStore.open(uri)
    first, last = steps if steps is not None else (None, None)
    for path in store.parts("trajectories"):
        m = re.search(r"step-(\d+)\.parquet$", path)
        if not m:
            continue
        step = int(m.group(1))
        if (first is not None and step < first) or (last is not None and step > last):
            continue
        yield read_part(store.fs, path, COLUMNS)


def _groups(trajs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The trajectories of one step by group, in (group_id, sample) order."""
    by: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for t in trajs:
        by.setdefault((t["step"], t["group_id"]), []).append(t)
    return [sorted(g, key=lambda t: t["sample"]) for _, g in sorted(by.items())]


def _split(turns: list[dict[str, Any]]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(the prompt: messages before the first assistant turn, the rest of the conversation)."""
    msgs = [{"role": u["role"], "content": u["content"]} for u in turns or []]
    first = next((i for i, m in enumerate(msgs) if m["role"] == "assistant"), len(msgs))
    rest = msgs[first:]
    while rest and rest[-1]["role"] != "assistant":  # never end a reply on environment text
        rest.pop()
    return msgs[:first], rest


def _components(t: dict[str, Any]) -> dict[str, Any]:
    return dict(t["reward_components"] or [])


def group_pairs(
    group: list[dict[str, Any]],
    min_margin: float | None = None,
    max_pairs: int | None = None,
    skipped: Counter[str] | None = None,
) -> list[dict[str, Any]]:
    """The preference rows of one group (rows of the trajectories table): every ordered
    pair whose reward difference is > 0 and >= min_margin, largest margins first (ties:
    chosen's sample, then rejected's), at most `max_pairs`."""
    skipped = skipped if skipped is not None else Counter()
    usable = []
    for t in group:
        if t["status"] == "error":
            skipped["failed episodes"] += 1
        elif t["reward"] is None:
            skipped["trajectories without a reward"] += 1
        elif not any(u["role"] == "assistant" for u in t["turns"] or []):
            skipped["trajectories without a reply"] += 1
        else:
            if t["reward_flags"]:
                skipped["flagged (never chosen)"] += 1
            usable.append(t)
    least = max(min_margin or 0.0, 0.0)
    found = []
    for c in usable:
        if c["reward_flags"]:
            continue
        for r in usable:
            margin = c["reward"] - r["reward"]
            if margin > _EPS and margin >= least - _EPS:
                found.append((-margin, c["sample"], r["sample"], c, r))
    found.sort(key=lambda x: x[:3])
    if max_pairs is not None and len(found) > max_pairs:
        skipped["pairs over the cap"] += len(found) - max_pairs
        found = found[:max_pairs]
    rows = []
    for neg, _, _, c, r in found:
        prompt, chosen = _split(c["turns"])
        _, rejected = _split(r["turns"])
        rows.append(
            {
                "prompt": prompt,
                "chosen": chosen,
                "rejected": rejected,
                "margin": round(-neg, 12),
                "chosen_reward": c["reward"],
                "rejected_reward": r["reward"],
                "chosen_components": json.dumps(_components(c), ensure_ascii=False),
                "rejected_components": json.dumps(_components(r), ensure_ascii=False),
                "task_id": c["task_id"],
                "domain": c["domain"],
                "step": c["step"],
                "group_id": c["group_id"],
                "chosen_sample": c["sample"],
                "rejected_sample": r["sample"],
            }
        )
    return rows


def passing(t: dict[str, Any]) -> bool:
    """Every test passed; for a domain without tests (exec_total null), completion >= 1."""
    if t["exec_total"] is not None:
        return t["exec_total"] > 0 and t["exec_passed"] == t["exec_total"]
    done = _components(t).get("completion")
    return done is not None and done >= 1.0 - _EPS


def sft_refusal(t: dict[str, Any]) -> str | None:
    """Why a trajectory cannot be an SFT example (None: it can)."""
    if t["status"] == "error":
        return "failed episodes"
    if t["reward"] is None:
        return "trajectories without a reward"
    if t["reward_flags"]:
        return "flagged"
    if not any(u["role"] == "assistant" for u in t["turns"] or []):
        return "trajectories without a reply"
    if not passing(t):
        return "not passing"
    return None


def sft_row(t: dict[str, Any]) -> dict[str, Any]:
    """A code reply judged by tests stands alone: the prompt and that reply, without the
    failed attempts before it. An episode judged as a whole (tool calls against a
    simulator, no tests on the last reply) keeps every turn: its last reply alone (say
    `{"tool": "done"}`) teaches nothing."""
    prompt, rest = _split(t["turns"])
    whole = t.get("exec_total") is None and sum(m["role"] == "assistant" for m in rest) > 1
    return {
        "messages": [*prompt, *rest] if whole else [*prompt, rest[-1]],
        "task_id": t["task_id"],
        "domain": t["domain"],
        "reward": t["reward"],
        "step": t["step"],
        "group_id": t["group_id"],
        "sample": t["sample"],
        "attempts": sum(m["role"] == "assistant" for m in rest),
    }


# ---- writing -------------------------------------------------------------------------


def _schema(fmt: str) -> Any:
    import pyarrow as pa

    msgs = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    if fmt == "preference":
        return pa.schema(
            [
                ("prompt", msgs),
                ("chosen", msgs),
                ("rejected", msgs),
                ("margin", pa.float64()),
                ("chosen_reward", pa.float64()),
                ("rejected_reward", pa.float64()),
                ("chosen_components", pa.string()),
                ("rejected_components", pa.string()),
                ("task_id", pa.string()),
                ("domain", pa.string()),
                ("step", pa.int32()),
                ("group_id", pa.string()),
                ("chosen_sample", pa.int32()),
                ("rejected_sample", pa.int32()),
            ]
        )
    return pa.schema(
        [
            ("messages", msgs),
            ("task_id", pa.string()),
            ("domain", pa.string()),
            ("reward", pa.float64()),
            ("step", pa.int32()),
            ("group_id", pa.string()),
            ("sample", pa.int32()),
            ("attempts", pa.int32()),
        ]
    )


def _write(rows: list[dict[str, Any]], out: str, kind: str, fmt: str) -> None:
    """The rows to `out` (a local path or fsspec URL), whole or not at all."""
    import uuid

    import fsspec

    fs, path = fsspec.core.url_to_fs(out)
    parent = path.rsplit("/", 1)[0] if "/" in path else ""
    if parent:
        fs.makedirs(parent, exist_ok=True)
    tmp = f"{parent + '/' if parent else ''}.{path.rsplit('/', 1)[-1]}.{uuid.uuid4().hex}.tmp"
    try:
        with fs.open(tmp, "wb") as f:
            if kind == "jsonl":
                for row in rows:
                    f.write((json.dumps(row, ensure_ascii=False) + "\n").encode())
            else:
                import pyarrow as pa
                import pyarrow.parquet as pq

                pq.write_table(pa.Table.from_pylist(rows, schema=_schema(fmt)), f, compression="zstd")
        fs.mv(tmp, path)
    finally:
        if fs.exists(tmp):
            fs.rm(tmp)
