"""Alerts in real training runs with a scripted policy: a policy that starts exiting before
the tests after step 3 is caught (and stopped, checkpointed, posted to a webhook); a
healthy policy raises nothing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rlvr.cli import main
from rlvr.config import load_config
from rlvr.trace.monitor import RunStopped
from rlvr.trace.query import query
from rlvr.train.loop import train
from tests.integration.helpers import tiny_run, use_scripted_policy, write_add_tasks

QUICK = Path(__file__).parents[2] / "examples" / "quickstart.yaml"


@pytest.fixture
def tasks(tmp_path: Path) -> Path:
    return write_add_tasks(tmp_path / "add.jsonl")


def scripted(monkeypatch: pytest.MonkeyPatch, hack_from: int | None) -> None:
    use_scripted_policy(monkeypatch, hack_from)


overrides = tiny_run


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    server.shutdown()


def test_a_policy_that_starts_hacking_is_stopped_with_a_checkpoint_and_a_webhook(
    tmp_path: Path, tasks: Path, monkeypatch: pytest.MonkeyPatch, webhook: tuple[str, list[dict[str, Any]]]
) -> None:
    url, received = webhook
    scripted(monkeypatch, hack_from=4)
    cfg = load_config(
        QUICK,
        overrides(tmp_path, tasks, "hack", "train.steps=10", "alerts.rules={hack_rate: {action: stop}}",
                  f"alerts.webhook={url}"),
    )  # fmt: skip
    with pytest.raises(RunStopped, match="hack_rate") as stopped:
        train(cfg, quiet=True)
    assert stopped.value.alert.step == 4  # the first hacking step: its window mean is 0.25
    run = tmp_path / "hack"
    assert (run / "checkpoints" / "step-000004" / "state.json").is_file()
    steps = [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]
    # (throughput_drop may fire too on a machine busy with other work: only the hacking rules are asserted)
    sql = "SELECT step, rule, category, action FROM alerts WHERE category = 'hacking' ORDER BY rule"
    _, rows = query(str(run / "traces"), sql)
    # every sample now writes the same exit for every task: identical_completions fires too
    assert rows == [(4, "hack_rate", "hacking", "stop"), (4, "identical_completions", "hacking", "warn")]
    assert [(h["rule"], h["step"], h["run"]) for h in received if h["rule"] == "hack_rate"] == [
        ("hack_rate", 4, "hack")
    ]
    # the CLI says why and exits 4; --resume continues from the checkpoint (and stops again)
    assert main(["train", str(QUICK), *overrides(tmp_path, tasks, "hack2", "train.steps=10",
                 "alerts.rules={hack_rate: {action: stop}}")]) == 4  # fmt: skip


def test_a_healthy_policy_raises_no_alert(tmp_path: Path, tasks: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scripted(monkeypatch, hack_from=None)
    # throughput_drop watches this machine, not the policy: a CI machine busy with something
    # else is a real drop (its quiet case is a unit test); every other rule must stay quiet
    extra = ("train.steps=12", "alerts.rules={throughput_drop: {action: off}}")
    train(load_config(QUICK, overrides(tmp_path, tasks, "ok", *extra)), quiet=True)
    _, rows = query(str(tmp_path / "ok" / "traces"), "SELECT step, rule, message FROM alerts")
    assert rows == [], rows


def test_checkpoint_action_saves_and_goes_on_and_a_dead_webhook_does_not_stop_training(
    tmp_path: Path, tasks: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scripted(monkeypatch, hack_from=3)
    extra = ("train.steps=5", "alerts.rules={hack_rate: {action: checkpoint}}", "alerts.webhook=http://127.0.0.1:9/x")
    train(load_config(QUICK, overrides(tmp_path, tasks, "ck", *extra)), quiet=True)
    ckpts = sorted(p.name for p in (tmp_path / "ck" / "checkpoints").iterdir())
    assert ckpts == ["step-000003", "step-000005"]  # the alert's, then the final one
    err = capsys.readouterr().err
    assert "ALERT [hacking] step 3: hack_rate" in err
    assert err.count("the alert webhook failed") == 1 and "127.0.0.1:9" not in err  # once; the URL is a secret
