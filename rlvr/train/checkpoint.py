"""Checkpoints: model weights (safetensors, a loadable HF directory), tokenizer, learner
state (optimizer, scheduler, policy version), sampler position, RNG states, counters.

A checkpoint is written into a temporary directory and renamed into place, so a crash
mid-write leaves the previous checkpoint intact; only complete checkpoints (with
`state.json` written last) are ever listed. The newest `keep` are kept. Finding the
latest checkpoint imports nothing heavy (the CLI checks --checkpoint before torch loads).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase


def _ckpt_dirs(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    done = [p for p in root.glob("step-*") if (p / "state.json").is_file() and not p.name.endswith(".tmp")]
    return sorted(done, key=lambda p: int(p.name.split("-")[1]))


def latest_checkpoint(root: Path) -> Path | None:
    dirs = _ckpt_dirs(root)
    return dirs[-1] if dirs else None


def save_checkpoint(
    root: Path,
    step: int,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    learner_state: dict[str, Any],
    extra: dict[str, Any],
    keep: int = 2,
    files: dict[str, str] | None = None,
    tensors: dict[str, dict[str, torch.Tensor]] | None = None,
) -> Path:
    """Write checkpoint `step` atomically; `files` are extra text files (name -> content),
    `tensors` extra safetensors files (name -> state dict)."""
    import numpy as np
    import torch
    from safetensors.torch import save_file

    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:06d}"
    tmp = root / f"step-{step:06d}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    model.save_pretrained(str(tmp / "model"))
    tokenizer.save_pretrained(str(tmp / "model"))
    torch.save(
        {
            "learner": learner_state,
            "rng": {
                "torch": torch.get_rng_state(),
                "python": random.getstate(),
                "numpy": np.random.get_state(),
            },
        },
        tmp / "trainer.pt",
    )
    for name, text in (files or {}).items():
        (tmp / name).write_text(text)
    for name, state in (tensors or {}).items():
        save_file({k: v.contiguous() for k, v in state.items()}, str(tmp / name))
    (tmp / "state.json").write_text(json.dumps({"step": step, **extra}, indent=2))
    _fsync_tree(tmp)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    _fsync_dir(root)
    for old in _ckpt_dirs(root)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _fsync_tree(path: Path) -> None:
    """Flush every file of the new checkpoint to disk before it is renamed into place, so
    that even a power loss leaves either the old or the complete new checkpoint."""
    for p in sorted(path.rglob("*")):
        if p.is_file():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    _fsync_dir(path)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def load_trainer_state(ckpt: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(trainer.pt contents with RNG states restored, state.json contents)."""
    import numpy as np
    import torch

    blob = torch.load(ckpt / "trainer.pt", weights_only=False, map_location="cpu")
    rng = blob["rng"]
    torch.set_rng_state(rng["torch"])
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    return blob, json.loads((ckpt / "state.json").read_text())


FINGERPRINT_STRIDE = 1009  # every 1009th weight of each tensor: ~0.1% of the model, microseconds


def weights_fingerprint(model: torch.nn.Module) -> float:
    """A cheap number that changes when the weights do: a weighted float64 sum over a fixed
    sample of every parameter (a step's update moves essentially every weight). Logged with
    every step so that `rlvr replay --train` can check a re-run update without a checkpoint
    at that step; equal fingerprints are evidence, identical tensors are proof."""
    import torch

    total = 0.0
    with torch.no_grad():
        for i, (_, p) in enumerate(sorted(model.named_parameters())):
            total += (i + 1) * float(p.detach().reshape(-1)[::FINGERPRINT_STRIDE].double().sum())
    return total
