"""Checkpoints in object storage (storage.uri) on a local S3 server (moto): each is copied
there once written; a run whose directory is gone (a new machine) resumes from there and
ends with the weights of a run never interrupted; the trace store goes there too."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

pytest.importorskip("s3fs")
pytest.importorskip("moto")

from rlvr.config import ConfigError
from rlvr.trace.parquet import TraceStore, run_store_uri
from rlvr.train.ckpt_store import CheckpointStore
from rlvr.train.loop import train
from tests.integration.test_pipeline import _weights
from tests.integration.test_traces_s3 import BUCKET, s3  # noqa: F401 - the fixture
from tests.integration.test_train import _toy_cfg

COMMON = ["eval.before_training=false", "eval.num_tasks=1", "train.checkpoint_every=1", "train.keep_checkpoints=2"]


def _cfg(where: Path, *extra: str):  # type: ignore[no-untyped-def]
    where.mkdir(parents=True, exist_ok=True)
    return _toy_cfg(where, *extra, *COMMON)


def test_a_run_resumes_on_a_new_machine_from_checkpoints_in_s3(s3: str, tmp_path: Path) -> None:  # noqa: F811
    uri = f"s3://{BUCKET}/runs/moved"
    straight = train(_cfg(tmp_path / "a", "name=straight", "train.steps=3"), quiet=True)
    first = _cfg(tmp_path / "b", "name=moved", "train.steps=2", f"storage.uri={uri}")
    train(first, quiet=True)
    store = CheckpointStore(uri)
    assert store.steps() == [1, 2]  # copied after each checkpoint, the newest keep_checkpoints kept
    assert store.fs.exists(f"{BUCKET}/runs/moved/checkpoints/step-000002/model/model.safetensors")
    assert TraceStore.open(f"{uri}/traces").steps() == [1, 2]  # the trace store went there too
    assert run_store_uri(str(tmp_path / "b" / "moved")) == f"{uri}/traces"
    assert not (tmp_path / "b" / "moved" / "traces").exists()

    with pytest.raises(ConfigError, match="already holds checkpoints"):  # a fresh run may not overwrite them
        train(_cfg(tmp_path / "c", "name=moved", "train.steps=3", f"storage.uri={uri}"), quiet=True)
    # a new machine: no run directory at all; the same config resumes from storage
    shutil.rmtree(tmp_path / "b")
    again = _cfg(tmp_path / "b", "name=moved", "train.steps=3", f"storage.uri={uri}")
    resumed = train(again, resume=True, quiet=True)
    assert resumed.rewards[-1] == straight.rewards[-1]
    a, b = _weights(tmp_path / "a" / "straight"), _weights(tmp_path / "b" / "moved")
    assert all(torch.equal(a[k], b[k]) for k in a)  # as if never interrupted
    assert store.steps() == [2, 3]
    assert TraceStore.open(f"{uri}/traces").steps() == [1, 2, 3]


def test_an_upload_cut_short_is_not_a_checkpoint(s3: str, tmp_path: Path) -> None:  # noqa: F811
    store = CheckpointStore(f"s3://{BUCKET}/runs/cut")
    local = tmp_path / "step-000004"
    (local / "model").mkdir(parents=True)
    (local / "model" / "weights.bin").write_bytes(b"x" * 1000)
    store.fs.put_file(str(local / "model" / "weights.bin"), f"{BUCKET}/runs/cut/checkpoints/step-000004/w.bin")
    assert store.steps() == []  # no state.json: not listed
    (local / "state.json").write_text('{"step": 4}')
    store.upload(local, keep=2)
    assert store.steps() == [4]
    got = store.fetch(4, tmp_path / "fetched")
    assert (got / "model" / "weights.bin").read_bytes() == b"x" * 1000
    assert not store.fs.exists(f"{BUCKET}/runs/cut/checkpoints/step-000004/w.bin")  # the partial copy went
