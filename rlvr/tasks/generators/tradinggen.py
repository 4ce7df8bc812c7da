"""Generator of the bundled trading tasks (`data/trading.jsonl`) for the `trading` domain.

Each task is an account, a set of quotes, rules and a goal (see `rlvr.envs.trading`).
The prompt states the tools, the rules and the goal but not the account or the prices:
the model has to ask. Every task carries a reference plan (its tool calls) that the
simulator is checked to accept with full reward when the file is written. Seeded;
`python -m rlvr.tasks.generators.tradinggen` rewrites the file byte for byte.

Difficulty: 1 = one order reaches the goal; 2 = the goal needs a quote and arithmetic
(invest a budget) or several orders (the per-order limit); 3 = several positions, a
restricted symbol, a cash floor and an order budget together.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import rlvr.envs.trading  # noqa: F401  (registers the domain)
from rlvr.envs.base import check_reply
from rlvr.tasks.loader import BUNDLED_DIR, write_tasks
from rlvr.types import Task

DATA = BUNDLED_DIR / "trading.jsonl"
SYMBOLS = ["ACME", "BOLT", "CRUX", "DYNA", "EONX", "FLUX", "GRID", "HELO"]

TOOLS = (
    "You manage a brokerage account through tools. Call a tool by writing a JSON object:\n"
    '- {"tool": "get_account"} -> your cash and positions\n'
    '- {"tool": "get_quote", "symbol": "ACME"} -> bid and ask prices\n'
    '- {"tool": "place_order", "symbol": "ACME", "side": "buy" or "sell", "qty": whole number} '
    "-> buys fill at the ask, sells at the bid\n"
    '- {"tool": "done"} -> when the goal is reached\n'
    "You may write several calls in one reply; their results come back in the next message."
)


def _quotes(r: random.Random, syms: list[str]) -> dict[str, dict[str, float]]:
    out = {}
    for s in syms:
        ask = round(r.uniform(8, 300), 2)
        bid = round(ask * (1 - r.uniform(0.001, 0.006)), 2)
        out[s] = {"bid": bid, "ask": ask}
    return out


def _order(sym: str, side: str, qty: int) -> dict[str, Any]:
    return {"tool": "place_order", "symbol": sym, "side": side, "qty": qty}


def _split(sym: str, side: str, qty: int, cap: int) -> list[dict[str, Any]]:
    return [_order(sym, side, min(cap, qty - k)) for k in range(0, qty, cap)]


def _rules_text(rules: dict[str, Any]) -> str:
    lines = ["No short selling: never sell more shares than you hold."]
    if "max_order_qty" in rules:
        lines.append(f"At most {rules['max_order_qty']} shares per order.")
    if rules.get("restricted"):
        lines.append(f"Restricted (do not trade): {', '.join(rules['restricted'])}.")
    if rules.get("min_cash"):
        lines.append(f"Cash must never fall below {rules['min_cash']:.2f}.")
    if "max_orders" in rules:
        lines.append(f"At most {rules['max_orders']} orders in total.")
    return "Rules:\n" + "\n".join(f"- {x}" for x in lines)


def _hold(r: random.Random, hard: bool) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]], str]:
    syms = r.sample(SYMBOLS, 3)
    sym = syms[0]
    held = r.randint(1, 40)
    cap = 25 if hard else 100
    target = held + r.randint(30, 70) if hard else held + r.choice([-1, 1]) * r.randint(5, 20)
    target = max(0, target)
    quotes = _quotes(r, syms)
    cash = round(quotes[sym]["ask"] * max(0, target - held) * 1.5 + 1000, 2)
    spec: dict[str, Any] = {
        "account": {"cash": cash, "positions": {sym: held, syms[1]: r.randint(1, 30)}},
        "quotes": quotes,
        "rules": {"no_short": True, "max_order_qty": cap},
        "goal": {"type": "hold", "symbol": sym, "qty": target},
    }
    side, qty = ("buy", target - held) if target >= held else ("sell", held - target)
    plan = [{"tool": "get_account"}] + (_split(sym, side, qty, cap) if qty else [])
    return spec, spec["rules"], plan, f"Goal: end holding exactly {target} shares of {sym}."


def _invest(r: random.Random, hard: bool) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]], str]:
    syms = r.sample(SYMBOLS, 3)
    sym = syms[0]
    quotes = _quotes(r, syms)
    budget = float(r.randrange(1000, 6000, 50))
    cap = 10 if hard else 1000
    qty = math.floor(budget / quotes[sym]["ask"] + 1e-9)
    spec: dict[str, Any] = {
        "account": {"cash": budget + r.randrange(500, 3000, 100), "positions": {syms[1]: r.randint(1, 20)}},
        "quotes": quotes,
        "rules": {"no_short": True, "max_order_qty": cap},
        "goal": {"type": "invest", "symbol": sym, "budget": budget},
    }
    plan = [{"tool": "get_quote", "symbol": sym}, *_split(sym, "buy", qty, cap)]
    text = f"Goal: buy as many whole shares of {sym} as {budget:.2f} affords at the ask, spending no more than that."
    return spec, spec["rules"], plan, text


def _flatten(r: random.Random, hard: bool) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]], str]:
    syms = r.sample(SYMBOLS, 4 if hard else 2)
    keep = [syms[-1]] if hard else []
    positions = {s: r.randint(5, 60) for s in syms}
    cap = 30
    spec: dict[str, Any] = {
        "account": {"cash": round(r.uniform(100, 2000), 2), "positions": positions},
        "quotes": _quotes(r, syms),
        "rules": {"no_short": True, "max_order_qty": cap, **({"restricted": keep} if keep else {})},
        "goal": {"type": "flatten", "keep": keep},
    }
    plan: list[dict[str, Any]] = [{"tool": "get_account"}]
    for s in syms:
        if s not in keep:
            plan += _split(s, "sell", positions[s], cap)
    text = "Goal: sell every position" + (f" except {', '.join(keep)}." if keep else ".")
    return spec, spec["rules"], plan, text


def _raise_cash(r: random.Random) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]], str]:
    syms = r.sample(SYMBOLS, 4)
    quotes = _quotes(r, syms)
    positions = {s: r.randint(10, 50) for s in syms}
    restricted = syms[0]
    cash = round(r.uniform(200, 800), 2)
    # sell the tradable positions, largest value first, until the target is reached
    sellable = sorted(syms[1:], key=lambda s: -quotes[s]["bid"] * positions[s])
    value = sum(quotes[s]["bid"] * positions[s] for s in sellable)
    amount = float(math.floor(cash + value * r.uniform(0.35, 0.7)))
    cap = 40
    plan: list[dict[str, Any]] = [{"tool": "get_account"}] + [{"tool": "get_quote", "symbol": s} for s in sellable]
    have = cash
    for s in sellable:
        if have >= amount:
            break
        need = math.ceil((amount - have) / quotes[s]["bid"] - 1e-9)
        qty = min(need, positions[s])
        plan += _split(s, "sell", qty, cap)
        have += round(quotes[s]["bid"] * qty, 2)
    orders = sum(1 for c in plan if c["tool"] == "place_order")
    rules = {"no_short": True, "max_order_qty": cap, "restricted": [restricted], "max_orders": orders + 2}
    spec: dict[str, Any] = {
        "account": {"cash": cash, "positions": positions},
        "quotes": quotes,
        "rules": rules,
        "goal": {"type": "cash_at_least", "amount": amount},
    }
    return spec, rules, plan, f"Goal: end with at least {amount:.2f} in cash."


def build(n_per_kind: int = 15, seed: int = 11) -> list[Task]:
    r = random.Random(seed)
    makers = [
        ("hold", 1, lambda: _hold(r, False)),
        ("flatten", 1, lambda: _flatten(r, False)),
        ("invest", 2, lambda: _invest(r, False)),
        ("hold_split", 2, lambda: _hold(r, True)),
        ("invest_split", 3, lambda: _invest(r, True)),
        ("flatten_keep", 3, lambda: _flatten(r, True)),
        ("raise_cash", 3, lambda: _raise_cash(r)),
    ]
    tasks = []
    for name, difficulty, make in makers:
        for i in range(n_per_kind):
            spec, rules, plan, goal_text = make()
            prompt = f"{TOOLS}\n\n{_rules_text(rules)}\n\n{goal_text}"
            tasks.append(
                Task(
                    id=f"trading/{name}/{i}",
                    domain="trading",
                    prompt=prompt,
                    tests={"format": "trading", **spec},
                    reference="\n".join(json.dumps(c) for c in [*plan, {"tool": "done"}]),
                    difficulty=difficulty,
                )
            )
    return tasks


def verify(tasks: list[Task]) -> None:
    """Every reference plan reaches its goal with no violation (reward 1.0)."""
    for t in tasks:
        result = check_reply(t, str(t.reference))
        if not (result.done and result.reward and result.reward.total == 1.0):
            raise AssertionError(f"{t.id}: reference plan scores {result.reward}")


def main() -> None:
    tasks = build()
    verify(tasks)
    write_tasks(tasks, DATA)
    print(f"trading: {len(tasks)} tasks")


if __name__ == "__main__":
    main()
