"""The trace store on S3 (issue 13): a tiny training run writes its store to
`s3://bucket/run` on a local S3 server (moto, started as a subprocess), and the store
reads back through pyarrow (`read_table`) and through DuckDB (`rlvr.trace.query`, which
registers s3fs with DuckDB) exactly as a local one does.

No store option is needed for another endpoint: s3fs builds its client with botocore,
which reads `AWS_ENDPOINT_URL` (and the keys) from the environment.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto")

from rlvr.config import load_config
from rlvr.trace.parquet import TraceStore, read_table
from rlvr.trace.query import query
from rlvr.train.loop import train

QUICK = Path(__file__).parents[2] / "examples" / "quickstart.yaml"
TINY = [
    "model.name_or_path=tiny-random",
    "generation.max_new_tokens=6",
    "algo.group_size=2",
    "train.prompts_per_step=2",
    "eval.num_tasks=2",
    "eval.before_training=false",
]
BUCKET = "rlvr-traces"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A local S3 server with one empty bucket; its endpoint URL."""
    import s3fs

    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not start on port {port}") from None
                time.sleep(0.1)
        for key, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": endpoint,
        }.items():
            monkeypatch.setenv(key, value)
        s3fs.S3FileSystem.clear_instance_cache()  # no client made for another endpoint
        import boto3

        boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
        yield endpoint
    finally:
        s3fs.S3FileSystem.clear_instance_cache()  # no client left pointing at a stopped server
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_a_run_writes_its_store_to_s3_and_it_reads_back_with_pyarrow_and_duckdb(s3: str, tmp_path: Path) -> None:
    uri = f"s3://{BUCKET}/run"
    cfg = load_config(QUICK, [*TINY, "train.steps=2", f"output_dir={tmp_path}", "name=s", f"trace.uri={uri}"])
    train(cfg, quiet=True)
    assert not (tmp_path / "s" / "traces").exists()  # everything went to S3
    store = TraceStore.open(uri)
    assert type(store.fs).__name__ == "S3FileSystem"
    assert store.steps() == [1, 2] and store.steps("metrics") == [1, 2]
    assert all(p.startswith(f"{BUCKET}/run/") for p in store.parts())
    assert not [n for n in store.fs.find(f"{BUCKET}/run") if n.endswith(".tmp")]  # parts moved into place whole

    rows = read_table(uri).to_pylist()
    logged = [json.loads(x) for x in (tmp_path / "s" / "trajectories.jsonl").read_text().splitlines()]
    assert len(rows) == len(logged) == 2 * 2 * 2
    for row, log in zip(rows, logged, strict=True):
        assert (row["step"], row["task_id"], row["group_id"]) == (log["step"], log["task_id"], log["group_id"])
        assert row["reward"] == log["reward"]["total"]
        assert dict(row["reward_components"]) == log["reward"]["components"]
        assert row["completion"] == log["turns"][-1]["content"]

    columns, result = query(
        uri, "SELECT step, count(*) AS n, sum(reward) AS r FROM trajectories GROUP BY step ORDER BY 1"
    )
    assert columns == ["step", "n", "r"]
    expected = {s: sum(x["reward"]["total"] for x in logged if x["step"] == s) for s in (1, 2)}
    assert [(s, n) for s, n, _ in result] == [(1, 4), (2, 4)]
    assert [r for _, _, r in result] == pytest.approx([expected[1], expected[2]])
    _, metrics = query(uri, "SELECT step, value FROM metrics WHERE name = 'reward/mean' ORDER BY step")
    assert [s for s, _ in metrics] == [1, 2]
    _, turns = query(uri, "SELECT count(*) FROM turns WHERE role = 'assistant'")
    assert turns == [(8,)]
