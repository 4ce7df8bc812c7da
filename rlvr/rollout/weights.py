"""Policy versions as files for an engine in another process: a learner's state_dict under
the Hugging Face names vLLM's loader maps itself, written as one safetensors file per
version (`<root>/v<version>/model.safetensors`) through fsspec, so the root may be a local
directory, a shared file system or object storage. Nothing here imports vLLM."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping
from typing import Any

import fsspec
import torch
from safetensors.torch import save as safetensors_bytes

# Wrapper prefixes a learner's state_dict may carry (torch.compile, DDP, activation
# checkpointing, FSDP1); vLLM knows the plain Hugging Face names.
_WRAPPER_MARKS = ("_orig_mod.", "_checkpoint_wrapped_module.", "_fsdp_wrapped_module.")
_VERSION_DIR = re.compile(r"^v(\d{8})$")


def hf_weight_names(weights: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(name, tensor) pairs under the plain Hugging Face names (wrapper prefixes removed);
    LoRA adapter tensors are refused (an engine with its own weights takes merged ones)."""
    for name, tensor in weights.items():
        if ".lora_" in name or ".base_layer." in name:
            raise ValueError(
                f"an engine holding its own weights takes plain (merged) weights; got a LoRA adapter tensor "
                f"{name!r}: publish rlvr.rollout.lora.merged_copy(model).state_dict() (LoRA with engine.kind vllm or a "
                "reloading server is not supported yet)"
            )
        for mark in _WRAPPER_MARKS:
            name = name.replace(mark, "")
        yield name.removeprefix("module."), tensor


def version_dir(root: str, version: int) -> str:
    """Where `version` goes under `root` (a path or an fsspec URL)."""
    if version < 0:
        raise ValueError(f"a policy version is 0 or more, got {version}")
    return f"{root.rstrip('/')}/v{version:08d}"


def write_version(root: str, version: int, weights: Mapping[str, Any]) -> str:
    """Write `weights` as `<root>/v<version>/model.safetensors` and return that directory.
    Every name is written, tensors sharing storage (tied embeddings) each as its own copy:
    safetensors stores no aliases, and vLLM 0.32's in-place reload of a tied model given
    only the embedding leaves the head with its old values on the first reload (measured:
    log-prob error 21.8 nats on a tiny model; with both names written, none). The file
    appears whole or not at all (written under a temporary name, then moved)."""
    tensors: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    for name, t in hf_weight_names(weights):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"weight {name!r} is a {type(t).__name__}, not a tensor")
        t = t.detach().to("cpu").contiguous()
        ptr = t.untyped_storage().data_ptr()
        tensors[name] = t.clone() if ptr in seen else t
        seen.add(ptr)
    if not tensors:
        raise ValueError("no weights to write")
    target = version_dir(root, version)
    fs, path = fsspec.core.url_to_fs(target)
    fs.makedirs(path, exist_ok=True)
    final = posixpath.join(path, "model.safetensors")
    partial = final + ".partial"
    with fs.open(partial, "wb") as f:
        f.write(safetensors_bytes(tensors, metadata={"format": "pt", "rlvr_version": str(version)}))
    fs.mv(partial, final)
    return target


def _versions(root: str) -> tuple[Any, list[tuple[int, str]]]:
    """(the file system, [(version, its directory)]) under `root`."""
    fs, path = fsspec.core.url_to_fs(root)
    if not fs.exists(path):
        return fs, []
    found = []
    for entry in fs.ls(path, detail=False):
        m = _VERSION_DIR.match(posixpath.basename(str(entry).rstrip("/")))
        if m:
            found.append((int(m.group(1)), str(entry)))
    return fs, sorted(found)


def prune_versions(root: str, keep: int) -> list[int]:
    """Remove every version directory under `root` but `keep`; returns the versions removed."""
    fs, found = _versions(root)
    removed = []
    for v, entry in found:
        if v != keep:
            fs.rm(entry, recursive=True)
            removed.append(v)
    return removed


def local_path(uri: str) -> str:
    """A `file://` URL as a plain path (what a server on the same file system is given);
    other URLs and paths unchanged."""
    return uri.removeprefix("file://") if uri.startswith("file://") else uri


def read_version(root: str, version: int) -> dict[str, torch.Tensor]:
    """The tensors `write_version` wrote for `version` under `root` (a path or fsspec URL)."""
    from safetensors.torch import load as safetensors_load

    fs, path = fsspec.core.url_to_fs(version_dir(root, version))
    target = posixpath.join(path, "model.safetensors")
    if not fs.exists(target):
        raise FileNotFoundError(f"policy version {version} is not under {root} (no {target})")
    with fs.open(target, "rb") as f:
        return safetensors_load(f.read())


def prune_older(root: str, oldest: int) -> list[int]:
    """Remove the version directories under `root` older than `oldest`; returns them."""
    fs, found = _versions(root)
    removed = []
    for v, entry in found:
        if v < oldest:
            fs.rm(entry, recursive=True)
            removed.append(v)
    return removed
