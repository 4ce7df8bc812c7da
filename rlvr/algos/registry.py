"""Name → function registries for advantage estimators and policy losses.

Lookups of an unknown name fail with the list of valid names, so a typo in a config
is caught with a message that says what would have worked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

F = TypeVar("F", bound=Callable[..., object])


class Registry(Generic[F]):
    """A small named registry: `@reg.register("name")` then `reg.get("name")`."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, F] = {}

    def register(self, name: str) -> Callable[[F], F]:
        def deco(fn: F) -> F:
            if name in self._items:
                raise ValueError(f"{self.kind} '{name}' is already registered")
            self._items[name] = fn
            return fn

        return deco

    def get(self, name: str) -> F:
        try:
            return self._items[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} '{name}'; valid names: {', '.join(sorted(self._items))}") from None

    def names(self) -> list[str]:
        return sorted(self._items)
