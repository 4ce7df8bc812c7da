"""Shared fixtures: a tiny random policy with the real SmolLM2 tokenizer."""

from __future__ import annotations

import os

import pytest
import torch

from rlvr.rollout.models import TINY, load_policy


@pytest.fixture(autouse=True)
def _threads() -> None:
    torch.set_num_threads(2)


@pytest.fixture
def tiny():  # type: ignore[no-untyped-def]
    # RLVR_TEST_DEVICE=cuda runs the model-level tests on a GPU (bench/gpu_check.sh)
    model, tok = load_policy(TINY, seed=0, device=os.environ.get("RLVR_TEST_DEVICE", "cpu"))
    return model, tok
