"""What every reward component returns: a value and the details that explain it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class RewardComponent:
    value: float
    details: dict[str, Any] = field(default_factory=dict)
