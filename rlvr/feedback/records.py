"""Feedback records: what a person (or a run) said about one model output, in a
documented, versioned schema (docs/feedback.md). One JSON object per line:

    {"kind": "rating", "prompt": "...", "output": "...", "rating": 4, "scale": [1, 5],
     "source": "review-tool", "time": "2026-11-30T14:02:00Z", "who": "reviewer-7"}

kind        what was said, and the fields it needs besides the common ones
  rating      a score: `rating` within `scale` ([low, high], default [1, 5])
  thumbs      `thumbs`: "up" or "down"
  preference  a choice between `output` (a) and `output_b` (b): `preferred` "a", "b" or "tie"
  accepted    the output was used as it stood
  edited      the output was used after a person changed it: `edited` is the changed text
  rejected    the output was thrown away

common      `prompt` (a string: the user's message; or a list of {role, content}
            messages, the conversation before the output), `output` (the model's reply),
            `source` (where the record came from: an app, a review tool, `run:<name>`),
            `time` (ISO 8601 with a timezone), `who` (a person's or a system's id)
optional    `id` (default: a hash of the record's content, so an import repeated is a
            no-op), `task_id`, `family`, `conversation` (what splits keep together),
            `meta` (an object, kept as JSON), `schema` (1)

A record that breaks the schema is refused with one line naming its line and problem;
unknown keys are refused too (a misspelt `preffered` would otherwise be lost).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
KINDS = ("rating", "thumbs", "preference", "accepted", "edited", "rejected")
ROLES = ("system", "user", "assistant", "tool")
COMMON = ("kind", "prompt", "output", "source", "time", "who")
OPTIONAL = ("id", "task_id", "family", "conversation", "meta", "schema")
BY_KIND: dict[str, tuple[str, ...]] = {
    "rating": ("rating", "scale"),
    "thumbs": ("thumbs",),
    "preference": ("output_b", "preferred"),
    "accepted": (),
    "edited": ("edited",),
    "rejected": (),
}
DEFAULT_SCALE = (1.0, 5.0)


class FeedbackError(ValueError):
    """A record, file or store that cannot be read; the message is one line."""


Message = tuple[str, str]  # (role, content)


@dataclass(frozen=True)
class FeedbackRecord:
    kind: str
    prompt: tuple[Message, ...]
    output: str
    source: str
    time: datetime  # timezone-aware, UTC
    who: str
    id: str = ""
    output_b: str | None = None
    preferred: str | None = None  # "a" | "b" | "tie"
    rating: float | None = None
    scale: tuple[float, float] | None = None
    thumbs: str | None = None  # "up" | "down"
    edited: str | None = None
    task_id: str | None = None
    family: str | None = None
    conversation: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def label(self) -> float | None:
        """How good the output was on a 0..1 scale, where the record says so directly
        (rating, thumbs, accepted, rejected); None for a preference or an edit, which
        compare two texts instead."""
        if self.kind == "rating":
            assert self.rating is not None and self.scale is not None
            lo, hi = self.scale
            return (self.rating - lo) / (hi - lo)
        if self.kind == "thumbs":
            return 1.0 if self.thumbs == "up" else 0.0
        return {"accepted": 1.0, "rejected": 0.0}.get(self.kind)

    def messages(self) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in self.prompt]

    def to_json(self) -> dict[str, Any]:
        """The record as one line of the schema (what `parse_record` reads back)."""
        out: dict[str, Any] = {
            "schema": SCHEMA_VERSION,
            "id": self.id,
            "kind": self.kind,
            "prompt": self.messages(),
            "output": self.output,
            "source": self.source,
            "time": self.time.isoformat().replace("+00:00", "Z"),
            "who": self.who,
        }
        for key in BY_KIND[self.kind]:
            value = getattr(self, key)
            out[key] = list(value) if isinstance(value, tuple) else value
        for key in ("task_id", "family", "conversation"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.meta:
            out["meta"] = self.meta
        return out


def content_id(rec: FeedbackRecord) -> str:
    """A hash of what the record says (not its id): the same feedback imported twice has
    the same id."""
    body = rec.to_json()
    body.pop("id", None)
    text = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _text(obj: Mapping[str, Any], key: str, *, empty_ok: bool = False) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise FeedbackError(f"'{key}' must be a string, got {type(value).__name__}")
    if not empty_ok and not value.strip():
        raise FeedbackError(f"'{key}' is empty")
    return value


def parse_prompt(value: Any) -> tuple[Message, ...]:
    if isinstance(value, str):
        if not value.strip():
            raise FeedbackError("'prompt' is empty")
        return (("user", value),)
    if not isinstance(value, list) or not value:
        raise FeedbackError("'prompt' must be a string or a non-empty list of {role, content} messages")
    out = []
    for i, m in enumerate(value):
        if not isinstance(m, dict) or set(m) - {"role", "content"} or "role" not in m or "content" not in m:
            raise FeedbackError(f"'prompt' message {i} must be an object with exactly 'role' and 'content'")
        if m["role"] not in ROLES or not isinstance(m["content"], str):
            raise FeedbackError(f"'prompt' message {i}: role must be one of {', '.join(ROLES)}, content a string")
        out.append((str(m["role"]), str(m["content"])))
    if out[-1][0] == "assistant":
        raise FeedbackError("'prompt' ends with an assistant message: the output being judged goes in 'output'")
    return tuple(out)


def _time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise FeedbackError("'time' must be an ISO 8601 string with a timezone, e.g. 2026-11-30T14:02:00Z")
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise FeedbackError(f"'time' {value!r} is not ISO 8601 (e.g. 2026-11-30T14:02:00Z)") from None
    if t.tzinfo is None:
        raise FeedbackError(f"'time' {value!r} has no timezone (add Z or +HH:MM)")
    return t.astimezone(UTC)


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise FeedbackError(f"'{key}' must be a finite number, got {value!r}")
    return float(value)


def parse_record(obj: Any) -> FeedbackRecord:
    """One record from its JSON object; FeedbackError (one line) when it breaks the schema."""
    if not isinstance(obj, dict):
        raise FeedbackError(f"a record must be a JSON object, got {type(obj).__name__}")
    kind = obj.get("kind")
    if kind not in KINDS:
        raise FeedbackError(f"'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
    allowed = set(COMMON) | set(OPTIONAL) | set(BY_KIND[kind])
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise FeedbackError(f"unknown key(s) {', '.join(unknown)} for a '{kind}' record")
    missing = [k for k in COMMON if k not in obj]
    if missing:
        raise FeedbackError(f"missing {', '.join(missing)}")
    if obj.get("schema", SCHEMA_VERSION) != SCHEMA_VERSION:
        raise FeedbackError(f"schema {obj['schema']!r} is not one this version reads ({SCHEMA_VERSION})")
    extra: dict[str, Any] = {}
    if kind == "rating":
        scale = obj.get("scale", list(DEFAULT_SCALE))
        if not isinstance(scale, list) or len(scale) != 2:
            raise FeedbackError("'scale' must be [low, high]")
        lo, hi = _number(scale[0], "scale"), _number(scale[1], "scale")
        if not lo < hi:
            raise FeedbackError(f"'scale' [{lo:g}, {hi:g}]: low must be below high")
        if "rating" not in obj:
            raise FeedbackError("a rating record needs 'rating'")
        rating = _number(obj["rating"], "rating")
        if not lo <= rating <= hi:
            raise FeedbackError(f"'rating' {rating:g} is outside its scale [{lo:g}, {hi:g}]")
        extra = {"rating": rating, "scale": (lo, hi)}
    elif kind == "thumbs":
        if obj.get("thumbs") not in ("up", "down"):
            raise FeedbackError(f"'thumbs' must be 'up' or 'down', got {obj.get('thumbs')!r}")
        extra = {"thumbs": obj["thumbs"]}
    elif kind == "preference":
        if obj.get("preferred") not in ("a", "b", "tie"):
            raise FeedbackError(
                f"'preferred' must be 'a' (output), 'b' (output_b) or 'tie', got {obj.get('preferred')!r}"
            )
        extra = {"output_b": _text(obj, "output_b"), "preferred": obj["preferred"]}
    elif kind == "edited":
        extra = {"edited": _text(obj, "edited")}
    meta = obj.get("meta", {})
    if not isinstance(meta, dict):
        raise FeedbackError("'meta' must be an object")
    optional: dict[str, Any] = {}
    for key in ("task_id", "family", "conversation"):
        if obj.get(key) is not None:
            optional[key] = _text(obj, key)
    rec = FeedbackRecord(
        kind=kind,
        prompt=parse_prompt(obj["prompt"]),
        output=_text(obj, "output"),
        source=_text(obj, "source"),
        time=_time(obj["time"]),
        who=_text(obj, "who"),
        meta=meta,
        **optional,
        **extra,
    )
    if kind == "edited" and rec.edited == rec.output:
        raise FeedbackError("'edited' is the same text as 'output': record it as accepted")
    given = obj.get("id")
    if given is not None and (not isinstance(given, str) or not given.strip()):
        raise FeedbackError("'id' must be a non-empty string")
    return replace(rec, id=given or content_id(rec))


def iter_lines(lines: Iterable[str], name: str) -> Iterator[FeedbackRecord]:
    """Records from JSONL text; the first bad line stops it with `name:line: problem`."""
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise FeedbackError(f"{name}:{n}: not JSON ({e.msg} at column {e.colno})") from None
        try:
            yield parse_record(obj)
        except FeedbackError as e:
            raise FeedbackError(f"{name}:{n}: {e}") from None


def read_file(path: str | Path) -> list[FeedbackRecord]:
    """Every record of a JSONL file (all or nothing: a bad line names itself and none is kept)."""
    p = Path(path)
    if not p.is_file():
        raise FeedbackError(f"{p}: no such file")
    if p.suffix != ".jsonl":
        raise FeedbackError(f"{p}: feedback files are JSON lines (.jsonl), one record per line")
    with p.open(encoding="utf-8") as f:
        return list(iter_lines(f, str(p)))
