"""The trading tool-use domain with scripted replies (correct, wrong, malformed, hostile)."""

from __future__ import annotations

import json

import pytest

from rlvr.envs import EnvSettings, make_env
from rlvr.envs.base import run_sync
from rlvr.tasks.loader import BUNDLED_DIR
from rlvr.types import Task
from tests.domain_episodes import _episode

# ---- trading tool use ------------------------------------------------------------------

TRADE = Task(
    id="trading/t",
    domain="trading",
    prompt="Goal: hold exactly 30 ACME.",
    tests={
        "format": "trading",
        "account": {"cash": 1000.0, "positions": {"ACME": 10, "BOLT": 5}},
        "quotes": {"ACME": {"bid": 19.9, "ask": 20.0}, "BOLT": {"bid": 9.9, "ask": 10.0}},
        "rules": {"no_short": True, "max_order_qty": 15, "restricted": ["BOLT"]},
        "goal": {"type": "hold", "symbol": "ACME", "qty": 30},
    },
)


def test_trading_multi_turn_reaches_the_goal_after_reading_the_account() -> None:
    first, second = _episode(
        TRADE,
        [
            'Let me look first. {"tool": "get_account"}',
            '```json\n[{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 15},'
            ' {"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 5}, {"tool": "done"}]\n```',
        ],
    )
    assert not first.done and '"positions": {"ACME": 10, "BOLT": 5}' in first.messages[0]["content"]
    assert first.reward.total == 0.0  # goal not reached yet
    assert second.done and second.reward.total == 1.0
    assert second.reward.components == {"completion": 1.0, "goal": 1.0, "rules": 0.0, "calls": 0.0}


@pytest.mark.parametrize(
    ("reply", "total", "goal", "rules", "calls"),
    [
        # wrong: the goal is missed (bought 10 instead of 20)
        ('{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 10} {"tool": "done"}', 0.0, 0.0, 0.0, 0.0),
        # breaking a rule: one order over the per-order limit is rejected, then done right
        (
            '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 20}'
            '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 10}'
            '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 10}{"tool": "done"}',
            0.75,
            1.0,
            -0.25,
            0.0,
        ),
        # malformed: broken JSON and an unknown tool
        (
            '{"tool": "place_order", "symbol": ACME} {"tool": "set_cash", "cash": 1e9} {"tool": "done"}',
            -0.1,
            0,
            0,
            -0.1,
        ),
        # hostile: a restricted symbol, short selling, a string qty, a price of its own (ignored; over the limit)
        (
            '{"tool": "place_order", "symbol": "BOLT", "side": "sell", "qty": 5}'
            '{"tool": "place_order", "symbol": "ACME", "side": "sell", "qty": 11}'
            '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": "20"}'
            '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 20, "price": 0}{"tool": "done"}',
            -0.8,
            0.0,
            -0.75,
            -0.05,
        ),
    ],
)
def test_trading_rewards(reply: str, total: float, goal: float, rules: float, calls: float) -> None:
    (r,) = _episode(TRADE, [reply])
    assert r.done
    assert r.reward.total == pytest.approx(total)
    c = r.reward.components
    assert (c["goal"], c["rules"], c["calls"]) == pytest.approx((goal, rules, calls))


def test_trading_state_is_unchanged_when_a_step_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from rlvr.envs import trading

    env = make_env("trading", EnvSettings())
    run_sync(env.reset(TRADE))
    original = trading.Brokerage.call

    def flaky(self: trading.Brokerage, call: dict) -> dict:  # type: ignore[type-arg]
        if call.get("qty") == 5:
            raise RuntimeError("simulator crashed")
        return original(self, call)

    monkeypatch.setattr(trading.Brokerage, "call", flaky)
    reply = (
        '{"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 15}'
        ' {"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 5}'
    )
    with pytest.raises(RuntimeError):
        run_sync(env.step(reply))
    monkeypatch.setattr(trading.Brokerage, "call", original)
    r = run_sync(env.step(reply + '{"tool": "done"}'))  # the retry sees the untouched account
    assert r.reward.total == 1.0


@pytest.mark.regeneration
def test_bundled_trading_tasks_regenerate_and_their_plans_score_full() -> None:
    from rlvr.tasks.generators import tradinggen

    tasks = tradinggen.build()
    lines = (BUNDLED_DIR / "trading.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [t.to_dict() for t in tasks]
    assert {t.difficulty for t in tasks} == {1, 2, 3} and len(tasks) == 105
    tradinggen.verify(tasks)


def test_trading_task_errors_name_the_field() -> None:
    bad = Task(id="t/bad", domain="trading", prompt="x", tests={**TRADE.tests, "goal": {"type": "moon"}})
    with pytest.raises(ValueError, match=r"t/bad: tests\.goal\.type must be one of"):
        _episode(bad, [])
