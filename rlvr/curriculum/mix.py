"""Sharing draws among domains: the `curriculum.domain_mix`.

- `pooled`: no split; every task is in one pool.
- `fixed`: domain d gets a share w_d / sum(w) of the draws (`curriculum.domain_weights`,
  1.0 for a domain not named).
- `bandit`: each domain keeps a score, the mean absolute advantage of its groups
  (mean |r_i - mean r| scaled to 0..1, 1 for a group split half solved, half failed),
  averaged with older groups faded by `curriculum.memory` and starting at 0.5. Shares are
  softmax(log w_d + score_d / temperature), mixed with a floor so that every domain keeps
  `min_domain_share`: domains where the model is learning get the rollouts.

Under `fixed` and `bandit`, `max_domain_share` caps any one domain's share (its excess
goes to the others in proportion to theirs), so that none takes over a mix of many.

Each draw's domain is chosen by the shares with the caller's seeded generator.
"""

from __future__ import annotations

import math
import random
from typing import Any

from rlvr.config.curriculum import CurriculumConfig

POOLED = "*"  # the one pool's name under domain_mix 'pooled'


def group_signal(rewards: list[float]) -> float:
    """How much a group teaches, 0..1: mean absolute deviation of its rewards over 0.5
    (the most a reward in [0, 1] can deviate on average), clipped."""
    if not rewards:
        return 0.0
    mean = sum(rewards) / len(rewards)
    return min(1.0, sum(abs(r - mean) for r in rewards) / len(rewards) / 0.5)


def capped(shares: dict[str, float], ceiling: float) -> dict[str, float]:
    """`shares` (summing to 1) with none above `ceiling` (at least 1/n): each excess is
    given to the domains below it in proportion to their shares, until none is above."""
    ceiling = max(ceiling, 1.0 / len(shares))
    out = dict(shares)
    while True:
        over = {d for d, v in out.items() if v > ceiling + 1e-12}
        if not over:
            return out
        excess = sum(out[d] - ceiling for d in over)
        rest = {d: v for d, v in out.items() if d not in over and v < ceiling}
        base = sum(rest.values())
        for d in over:
            out[d] = ceiling
        for d, v in rest.items():
            out[d] = v + excess * (v / base if base > 0 else 1.0 / len(rest))


class DomainMix:
    def __init__(self, domains: list[str], cfg: CurriculumConfig) -> None:
        self.cfg, self.kind = cfg, cfg.domain_mix
        self.domains = [POOLED] if self.kind == "pooled" else sorted(domains)
        unknown = sorted(set(cfg.domain_weights) - set(domains))
        if unknown and self.kind != "pooled":
            raise ValueError(
                f"curriculum.domain_weights names {unknown}, not among the training tasks' domains {sorted(domains)}"
            )
        self.prior = {d: cfg.domain_weights.get(d, 1.0) for d in self.domains}
        if not any(w > 0 for w in self.prior.values()):
            raise ValueError("curriculum.domain_weights: every domain has weight 0")
        self.score = {d: 0.5 for d in self.domains}

    def shares(self) -> dict[str, float]:
        if self.kind == "pooled":
            return {POOLED: 1.0}
        total = sum(self.prior.values())
        if self.kind == "fixed":
            return capped({d: w / total for d, w in self.prior.items()}, self.cfg.max_domain_share)
        return capped(self._bandit_shares(), self.cfg.max_domain_share)

    def _bandit_shares(self) -> dict[str, float]:
        logits = {
            d: (math.log(w) + self.score[d] / self.cfg.bandit_temperature) if w > 0 else -math.inf
            for d, w in self.prior.items()
        }
        top = max(logits.values())
        exp = {d: math.exp(v - top) for d, v in logits.items()}
        z = sum(exp.values())
        m = min(self.cfg.min_domain_share, 1.0 / len(self.domains))
        return {d: (1 - m * len(self.domains)) * e / z + m for d, e in exp.items()}

    def allocate(self, n: int, rng: random.Random) -> list[str]:
        """The domain of each of n draws."""
        shares = list(self.shares().items())
        out = []
        for _ in range(n):
            u, acc = rng.random(), 0.0
            pick = shares[-1][0]
            for d, s in shares:
                acc += s
                if u < acc:
                    pick = d
                    break
            out.append(pick)
        return out

    def observe(self, domain: str, rewards: list[float]) -> None:
        if self.kind != "bandit" or domain not in self.score:
            return
        m = self.cfg.memory
        self.score[domain] = m * self.score[domain] + (1 - m) * group_signal(rewards)

    def state_dict(self) -> dict[str, Any]:
        return {"score": dict(self.score)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for d, v in state.get("score", {}).items():
            if d in self.score:
                self.score[d] = float(v)
