"""Small guarantees of the observability layer: secrets never leave the run directory,
a step with nothing trained logs no fake reward, the dashboard answers only its own host."""

from __future__ import annotations

import pytest

from rlvr.config.base import redact
from rlvr.trace.store import summarize_step
from rlvr.types import ExecutionResult, RewardBreakdown, RunStatus, Trajectory, Turn


def test_redact_removes_webhooks_and_url_passwords_only() -> None:
    cfg = {
        "alerts": {"webhook": "https://hooks.example/T000/B000/XXXX", "window": 5},
        "log": {"mlflow_tracking_uri": "https://alice:s3cret@mlflow.local:5000", "wandb_project": "p"},
        "trace": {"uri": "s3://bucket/run"},
        "plugins": ["http://bob:pw@host/x.py"],
    }
    out = redact(cfg)
    assert out["alerts"] == {"webhook": "<redacted>", "window": 5}
    assert out["log"]["mlflow_tracking_uri"] == "https://<redacted>@mlflow.local:5000"
    assert out["trace"]["uri"] == "s3://bucket/run" and out["plugins"] == ["http://<redacted>@host/x.py"]
    assert cfg["alerts"]["webhook"].startswith("https://hooks")  # the original is untouched
    assert redact({"alerts": {"webhook": None}}) == {"alerts": {"webhook": None}}


def _traj(task: str, group: str, reward: float, status: str = "ok", reply: str = "x") -> Trajectory:
    return Trajectory(
        task_id=task, domain="python", group_id=group, status=status,
        turns=[Turn("user", "q"), Turn("assistant", reply, [1, 2], trainable=True)],
        completion_ids=[1, 2], reward=RewardBreakdown(reward, {"completion": reward}),
        execution=ExecutionResult(RunStatus.OK),
    )  # fmt: skip


def test_a_step_with_nothing_trained_logs_no_reward_and_counts_dropped_groups() -> None:
    dropped = [_traj("a", "g1", 0.0), _traj("a", "g1", 0.0), _traj("b", "g2", 0.0, status="error")]
    out = summarize_step([], dropped)
    assert "reward/mean" not in out and "rollout/completion_len_mean" not in out
    assert out["rollout/equal_reward_groups_frac"] == 1.0  # g1 has no signal; the failed g2 is not counted
    assert out["sandbox/status/OK"] == pytest.approx(1.0)


def test_duplicates_compare_every_reply_of_an_episode() -> None:
    a = _traj("a", "g1", 1.0)
    b = _traj("b", "g2", 1.0)
    a.turns[1:1] = [Turn("assistant", "buy 3"), Turn("user", "ok")]
    b.turns[1:1] = [Turn("assistant", "sell 2"), Turn("user", "ok")]
    assert summarize_step([a, b])["rollout/duplicate_frac"] == 0.0  # the same last reply, different episodes
    b.turns[1].content = "buy 3"
    assert summarize_step([a, b])["rollout/duplicate_frac"] == 1.0


def test_dashboard_answers_only_requests_for_its_own_host() -> None:
    from rlvr.report.serve import _host_allowed

    local = ("127.0.0.1", 8050)
    assert _host_allowed("127.0.0.1:8050", local) and _host_allowed("localhost:8050", local)
    assert _host_allowed("[::1]:8050", local)
    assert not _host_allowed("attacker.example:8050", local)  # a DNS-rebound page
    assert not _host_allowed("", local)
    assert _host_allowed("10.0.0.5:8050", ("0.0.0.0", 8050))  # bound everywhere on purpose
