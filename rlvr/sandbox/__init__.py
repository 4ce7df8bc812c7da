"""Untrusted code execution.

What is protected (where the machine allows it; `rlvr sandbox check` prints what is active):
- the host's processes, files and network: each run is PID 1 of its own PID namespace
  with its own mount, IPC, UTS and (shared, empty, loopback-only) network namespaces; it
  sees a read-only view of /usr, /etc and the Python installation, a fresh size-capped
  /sandbox (its cwd) and /tmp, a minimal /dev and its own /proc; nothing else of the host;
- tests of one run: in one fork of the loaded code, one after another (shared, the
  default: a test can see what earlier tests of the run left, never the expected values)
  or each in its own fork (process); docs/sandbox.md;
- privileges: it runs as an unprivileged user id of its own, with no_new_privs and a
  seccomp filter refusing namespace, mount, ptrace, bpf, keyctl, kexec, module, perf and
  similar calls;
- resources: a cgroup per run (memory, number of processes, CPU accounting; a pool slot's
  group is reused only once every process of the previous run is gone, with its limits
  rewritten and its counters reset) plus rlimits (address space, CPU seconds, processes
  of its own user id, open files, file size, no core dumps), a wall-clock limit, capped
  captured output; the whole process tree is killed after every run (PID 1's death ends
  the PID namespace), so nothing survives into the next one;
- the verdict: expected values never enter the sandbox. The sandbox reports observed
  values (builtin types only); the supervisor compares. Exit codes are informational.

What is not protected: kernel vulnerabilities reachable through the allowed system calls;
timing side channels; CPU contention between concurrent runs (each is limited, not
isolated); the truth of assert-format tests that are not comparisons against a literal
(e.g. `assert is_valid(x)`), whose observed truth value a submission could forge; and,
when not running as root, everything that needs root (then only rlimits, the process
group and the verdict protection apply).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rlvr.sandbox.api import execute, execute_many
    from rlvr.sandbox.executor import Limits
    from rlvr.sandbox.pool import SandboxPool, default_pool

__all__ = ["Limits", "SandboxPool", "default_pool", "execute", "execute_many"]

# Loaded on first use: the fork server imports only the submodules it runs (each module
# it holds makes every fork of a run, one per test, slower).
_WHERE = {
    "execute": "api",
    "execute_many": "api",
    "Limits": "executor",
    "SandboxPool": "pool",
    "default_pool": "pool",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"rlvr.sandbox.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'rlvr.sandbox' has no attribute '{name}'")
