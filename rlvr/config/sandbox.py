"""The `sandbox` section: where submissions run and under which limits.

Part of the run configuration (`rlvr.config` re-exports every class); each field's
docstring is its documentation and its `rlvr config --keys` text."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from rlvr.config.base import _Section


class SandboxConfig(_Section):
    timeout_s: float = Field(5.0, gt=0.0)
    """Wall-clock limit for running one submission against its tests."""
    test_timeout_s: float | None = Field(2.0, gt=0.0)
    """Wall-clock limit for one test within that run (null: timeout_s), for suites run test
    by test (assert, call, stdio, script; a repository's pytest session has the whole
    run). A test past it is killed and the rest go on; when only held-out tests ran out of time the run is scored
    with them failed, and `reward.timeout_penalty` is kept for a program that runs out of
    time on a visible test (rlvr.envs.python_code.slow_on_held_out_only)."""
    memory_mb: int = Field(512, ge=32)
    """Memory limit of each test's process, in MiB (the run's cgroup holds memory_mb per
    test running at once)."""
    parallel_tests: int = Field(2, ge=1)
    """Test processes of one submission running side by side (assert and call formats).
    With test_isolation 'process' each test has its own fork of the loaded code; with
    'shared' a second process starts only beside a test that runs long; 1: one at a time."""
    test_isolation: Literal["shared", "process"] = "shared"
    """How the tests of one submission are kept apart (assert and call formats). 'shared':
    one after another in one fork of the loaded code, as HumanEval's own harness runs them
    (a test can see state left by an earlier test of the same run; a crash, timeout or
    broken process costs that test only: the rest go on in a fresh fork); 'process': each
    in its own fork (nothing carries from test to test; about 1 ms more CPU per test). In
    both, expected values never enter the sandbox."""
    cpus: float | None = Field(None, ge=0.01)
    """Cores one submission's processes together may use (a CPU-bandwidth quota on its
    cgroup), e.g. 1.0; null: no cap but the wall clock. Not enforced where the machine has
    no CPU controller (`rlvr sandbox check` says so)."""
    workers: int = Field(4, ge=1)
    """Submissions executed concurrently."""
    url: str | None = None
    """A remote sandbox server (`rlvr sandbox serve`), e.g. http://10.0.0.5:8080; null runs
    submissions in this machine's own sandbox pool."""
    token_env: str = "RLVR_SANDBOX_TOKEN"
    """Environment variable holding the remote server's bearer token (only with url)."""
