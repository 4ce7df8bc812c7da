"""Tool use against a simulated brokerage: an account, quotes and orders, called in JSON.

The model acts by writing tool calls, JSON objects anywhere in its reply:

    {"tool": "get_account"}
    {"tool": "get_quote", "symbol": "ACME"}
    {"tool": "place_order", "symbol": "ACME", "side": "buy", "qty": 10}
    {"tool": "done"}

Each reply's calls run in order; their results come back as the next message, and the
episode goes on until the model calls `done` (or replies without any call) or
`rollout.max_turns` is reached. Orders fill at once, buys at the ask and sells at the
bid. The task's rules are enforced by the simulator: an order that breaks one (more
than `max_order_qty` shares, selling more than is held — no short selling —, trading a
restricted symbol, spending cash below `min_cash`, more than `max_orders` orders) is
rejected and counted as a violation.

Reward (after every step, so an episode cut short by `max_turns` is scored as it
stands): `goal` = 1 when the goal holds, else 0; `rules` = -0.25 per violation; `calls`
= -0.05 per call that cannot be understood (bad JSON, unknown tool, missing or wrong
arguments). `completion` — the task's reward, what the default `reward.terms` trains on —
is goal + rules + calls clipped to [-1, 1]: reaching the goal by breaking a rule is not
a full success. The parts are logged as their own components and can be weighted apart
through `reward.terms`.

A goal that already holds when the episode starts (a `cash_at_least` the account
already meets, a `flatten` with nothing to sell) is a constraint to keep, not credit to
earn: `goal` stays 0 however the episode ends, and breaking it costs
`CONSTRAINT_PENALTY` (0.5, component `constraints`, present on such tasks only), so a reply that does nothing earns 0.

Goals (`tests.goal`): `{"type": "hold", "symbol", "qty"}` (hold exactly qty shares),
`{"type": "cash_at_least", "amount"}`, `{"type": "invest", "symbol", "budget"}` (buy
the most whole shares the budget affords at the ask, spending no more than it), and
`{"type": "flatten", "keep": [...]}` (no position left but those kept, which are not
traded).

Task tests: `{"format": "trading", "account": {"cash", "positions"}, "quotes":
{SYM: {"bid", "ask"}}, "rules": {...}, "goal": {...}}`.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from typing import Any

from rlvr.envs.base import EnvSettings, StepResult, opening_messages, register_env
from rlvr.envs.toolcalls import parse_tool_calls
from rlvr.types import RewardBreakdown, Task

VIOLATION_PENALTY = 0.25
INVALID_PENALTY = 0.05
CONSTRAINT_PENALTY = 0.5
GOALS = ("hold", "cash_at_least", "invest", "flatten")


@dataclass
class Brokerage:
    """The simulated account; every method returns the tool's JSON result."""

    cash: float
    positions: dict[str, int]
    quotes: dict[str, dict[str, float]]
    rules: dict[str, Any]
    orders: int = 0
    violations: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    bought: dict[str, int] = field(default_factory=dict)
    spent: dict[str, float] = field(default_factory=dict)
    traded: set[str] = field(default_factory=set)

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> Brokerage:
        acct = spec["account"]
        return cls(
            cash=float(acct["cash"]),
            positions={k: int(v) for k, v in acct.get("positions", {}).items()},
            quotes={k: {"bid": float(q["bid"]), "ask": float(q["ask"])} for k, q in spec["quotes"].items()},
            rules=dict(spec.get("rules", {})),
        )

    def call(self, call: dict[str, Any]) -> dict[str, Any]:
        tool = call.get("tool")
        if tool == "get_account":
            return {"cash": round(self.cash, 2), "positions": {k: v for k, v in sorted(self.positions.items()) if v}}
        if tool == "get_quote":
            sym = call.get("symbol")
            if sym not in self.quotes:
                return self._invalid(f"unknown symbol {sym!r}; symbols: {', '.join(sorted(self.quotes))}")
            return {"symbol": sym, **self.quotes[str(sym)]}
        if tool == "place_order":
            return self._order(call)
        return self._invalid(f"unknown tool {tool!r}; tools: get_account, get_quote, place_order, done")

    def _invalid(self, why: str) -> dict[str, Any]:
        self.invalid.append(why)
        return {"error": why}

    def _reject(self, why: str) -> dict[str, Any]:
        self.violations.append(why)
        return {"status": "rejected", "reason": why}

    def _order(self, call: dict[str, Any]) -> dict[str, Any]:
        sym, side, qty = call.get("symbol"), call.get("side"), call.get("qty")
        if sym not in self.quotes:
            return self._invalid(f"unknown symbol {sym!r}")
        if side not in ("buy", "sell"):
            return self._invalid(f"side must be 'buy' or 'sell', got {side!r}")
        if not isinstance(qty, int) or isinstance(qty, bool) or qty <= 0:
            return self._invalid(f"qty must be a positive whole number, got {qty!r}")
        sym = str(sym)
        r = self.rules
        if sym in r.get("restricted", []):
            return self._reject(f"{sym} is restricted: it may not be traded")
        if r.get("max_orders") is not None and self.orders >= int(r["max_orders"]):
            return self._reject(f"order limit reached ({r['max_orders']} orders)")
        if r.get("max_order_qty") is not None and qty > int(r["max_order_qty"]):
            return self._reject(f"qty {qty} is over the per-order limit of {r['max_order_qty']}")
        held = self.positions.get(sym, 0)
        if side == "sell" and qty > held and r.get("no_short", True):
            return self._reject(f"selling {qty} {sym} but only {held} held: short selling is not allowed")
        price = self.quotes[sym]["ask" if side == "buy" else "bid"]
        cost = round(price * qty, 2)
        if side == "buy" and self.cash - cost < float(r.get("min_cash", 0.0)) - 1e-9:
            return self._reject(
                f"buying {qty} {sym} costs {cost:.2f}, which would leave cash below {float(r.get('min_cash', 0.0)):.2f}"
            )
        self.orders += 1
        self.traded.add(sym)
        sign = 1 if side == "buy" else -1
        self.positions[sym] = held + sign * qty
        self.cash = round(self.cash - sign * cost, 2)
        self.bought[sym] = self.bought.get(sym, 0) + sign * qty
        self.spent[sym] = round(self.spent.get(sym, 0.0) + sign * cost, 2)
        return {"status": "filled", "symbol": sym, "side": side, "qty": qty, "price": price, "cash": self.cash}

    def goal_met(self, goal: dict[str, Any]) -> bool:
        kind = goal["type"]
        if kind == "hold":
            return self.positions.get(goal["symbol"], 0) == int(goal["qty"])
        if kind == "cash_at_least":
            return self.cash >= float(goal["amount"]) - 1e-9
        if kind == "invest":
            sym, budget = goal["symbol"], float(goal["budget"])
            most = math.floor(budget / self.quotes[sym]["ask"] + 1e-9)
            return self.bought.get(sym, 0) == most and self.spent.get(sym, 0.0) <= budget + 1e-9
        if kind == "flatten":
            keep = set(goal.get("keep", []))
            return all(v == 0 for k, v in self.positions.items() if k not in keep) and not (keep & self.traded)
        raise ValueError(f"unknown goal type {kind!r}; valid: {', '.join(GOALS)}")


def validate_spec(task: Task) -> None:
    t = task.tests
    if t.get("format") != "trading":
        raise ValueError(f"task {task.id}: trading tasks need tests with 'format': 'trading'")
    for key in ("account", "quotes", "goal"):
        if not isinstance(t.get(key), dict):
            raise ValueError(f"task {task.id}: tests.{key} must be an object")
    if t["goal"].get("type") not in GOALS:
        raise ValueError(f"task {task.id}: tests.goal.type must be one of {', '.join(GOALS)}")
    for sym, q in t["quotes"].items():
        if not (isinstance(q, dict) and {"bid", "ask"} <= set(q) and 0 < q["bid"] <= q["ask"]):
            raise ValueError(f"task {task.id}: tests.quotes.{sym} needs 0 < bid <= ask")


@register_env("trading")
class TradingEnv:
    components = ("goal", "rules", "calls", "constraints")  # reward terms may name them
    check_task = staticmethod(validate_spec)
    check_task = staticmethod(validate_spec)

    def __init__(self, settings: EnvSettings) -> None:
        self.settings = settings
        self.task: Task | None = None
        self.broker: Brokerage | None = None
        self.kept = False  # the goal held at reset: a constraint, not credit

    async def reset(self, task: Task) -> list[dict[str, str]]:
        validate_spec(task)
        self.task = task
        self.broker = Brokerage.from_spec(task.tests)
        self.kept = self.broker.goal_met(task.tests["goal"])
        return opening_messages(task, self.settings)

    closing_reply = '{"tool": "done"}'
    """What ends an episode whose goal is reached (the supervised stage closes a reference
    episode with it, rlvr.sft.data)."""

    LOOKS = ("get_account", "get_quote")

    @classmethod
    def reference_turns(cls, task: Task) -> list[str] | None:
        """The reference plan as an agent plays it over turns: first the calls that only
        look (the account, quotes), whose results come back, then the orders and `done`.
        A plan's order sizes are worked out from what those calls return, so written as one
        reply it would teach numbers the prompt does not show. None when the plan has no
        such split (it only looks, or only acts)."""
        lines = [ln for ln in str(task.reference or "").splitlines() if ln.strip()]
        try:
            tools = [json.loads(ln).get("tool") for ln in lines]
        except (json.JSONDecodeError, AttributeError):
            return None
        k = next((i for i, t in enumerate(tools) if t not in cls.LOOKS), len(tools))
        if k == 0 or k == len(tools):
            return None
        return ["\n".join(lines[:k]), "\n".join(lines[k:])]

    async def step(self, reply: str) -> StepResult:
        if self.task is None or self.broker is None:
            raise RuntimeError("step() before reset()")
        broker = copy.deepcopy(self.broker)  # committed only once the whole step has run
        calls, problems = parse_tool_calls(reply)
        for p in problems:
            broker.invalid.append(p)
        results: list[str] = [f"- error: {p}" for p in problems]
        finished = not calls
        for call in calls:
            if call.get("tool") == "done":
                finished = True
                break
            result = broker.call(call)
            results.append(f"- {json.dumps(call)} -> {json.dumps(result)}")
        self.broker = broker
        reward = self._reward(broker)
        if finished:
            return StepResult([], reward, done=True, info={"orders": broker.orders})
        text = "Tool results:\n" + "\n".join(results) + '\nContinue, or call {"tool": "done"} when the goal is reached.'
        return StepResult([{"role": "user", "content": text}], reward, done=False, info={"orders": broker.orders})

    def _reward(self, broker: Brokerage) -> RewardBreakdown:
        assert self.task is not None
        met = broker.goal_met(self.task.tests["goal"])
        goal = 1.0 if met and not self.kept else 0.0
        constraints = -CONSTRAINT_PENALTY if self.kept and not met else 0.0
        rules = -VIOLATION_PENALTY * len(broker.violations)
        fmt = -INVALID_PENALTY * len(broker.invalid)
        total = max(-1.0, min(1.0, goal + rules + fmt + constraints))
        details = {
            "violations": broker.violations[-5:],
            "invalid": broker.invalid[-5:],
            "orders": broker.orders,
            "goal_held_at_start": self.kept,
        }
        comps = {"completion": total, "goal": goal, "rules": rules, "calls": fmt}
        if self.kept:
            comps["constraints"] = constraints
        return RewardBreakdown(total, comps, details)
