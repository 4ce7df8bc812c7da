"""Unit tests are pure: no sandbox, no compiler, no process of any kind. Starting one here
is an error naming the test, so the rule holds by itself; such a test belongs in
tests/integration/."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest


class ProcessInUnitTest(AssertionError):
    pass


@pytest.fixture(autouse=True)
def _no_processes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(what: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise ProcessInUnitTest(
                f"{request.node.nodeid} starts a process ({what}): unit tests run no sandbox, compiler or "
                "subprocess; move it to tests/integration/"
            )

        return call

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse("subprocess"))
    monkeypatch.setattr(os, "fork", refuse("os.fork"))
    monkeypatch.setattr(os, "posix_spawn", refuse("os.posix_spawn"))
    monkeypatch.setattr(os, "posix_spawnp", refuse("os.posix_spawnp"))
    monkeypatch.setattr(os, "system", refuse("os.system"))
    yield
