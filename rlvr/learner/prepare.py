"""Preparing a batch for the update, in pieces that hold no learner state.

`Learner.prepare` (and the sharded learner) compose these:

1. `loss_masks`: which completion tokens are trained on (the trajectory's own loss
   mask, DAPO's overlong filter);
2. the no-grad passes, fed by any source of (row indices, `TokenStats`) micro-batches:
   `policy_pass` (the proximal log-probs and the value head's rollout-time values) and
   `reference_kl` (per-token KL of the behaviour log-probs to the reference model);
3. `token_advantages`: one switch between group estimators on sequence rewards and GAE
   on per-token rewards with the value head;
4. `importance`: truncated importance weights from behaviour to proximal policy, and
   their metrics;
5. `assemble`: one `Prepared` row per trajectory, all the gradient pass reads;
   `normalisers`: the loss's batch-wide denominators over those rows.

Per-row results are plain lists (one float per completion token): they do not depend on
how rows were split into micro-batches or across ranks, so a sharded learner runs the
passes on its share of the rows and gathers the lists.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import torch

from rlvr.algos import ADVANTAGES
from rlvr.algos.advantages import whiten
from rlvr.algos.filtering import budget_cut_loss_mask, overlong_loss_mask
from rlvr.algos.importance import importance_weights
from rlvr.algos.kl import KLFn
from rlvr.algos.names import estimator_needs
from rlvr.config import AlgoConfig
from rlvr.learner.logprobs import TokenStats
from rlvr.types import Trajectory

MicroBatches = Iterable[tuple[list[int], TokenStats]]
"""(indices of the rows, their token stats [b, L]) per micro-batch."""


@dataclass
class Prepared:
    """What the update needs per trajectory, fixed before the first optimizer step."""

    traj: Trajectory
    mask: list[float]  # [L] loss mask
    old: list[float]  # [L] log-probs the ratio is taken against (behaviour or proximal)
    adv: list[float]  # [L] advantage per token
    weights: list[float] | None = None  # [L] importance weights
    old_values: list[float] | None = None  # [L] gae only
    returns: list[float] | None = None  # [L] gae only


@dataclass(frozen=True)
class Needs:
    """Which no-grad passes a configuration needs before its first update."""

    proximal: bool  # log-probs under the current policy (decoupled PPO, importance correction)
    values: bool  # the value head's estimates (gae)
    ref_kl: bool  # per-token KL to the reference model, subtracted from the reward

    @classmethod
    def of(cls, algo: AlgoConfig) -> Needs:
        return cls(
            proximal=algo.decoupled or algo.importance != "none",
            values=estimator_needs(algo.advantage).values,
            ref_kl=algo.kl_coef > 0 and algo.kl_in == "reward",
        )

    @property
    def policy_pass(self) -> bool:
        return self.proximal or self.values


@dataclass
class Advantages:
    """Per row: token advantages [L], value targets [L] (gae, else empty), and the
    sequence advantage recorded on the trajectory; `metrics` (kl_reward)."""

    tokens: list[list[float]]
    returns: list[list[float]]
    sequence: list[float]
    metrics: dict[str, float] = field(default_factory=dict)


def pad_rows(rows: list[list[float]], L: int, device: torch.device | None = None) -> torch.Tensor:
    """[B, L] float32: each row cut or right-padded with zeros to L."""
    return torch.tensor([r[:L] + [0.0] * (L - len(r[:L])) for r in rows], dtype=torch.float32, device=device)


def group_index(trajs: list[Trajectory]) -> list[list[int]]:
    """[B][G] indices of each group's trajectories (groups in first-seen order)."""
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(trajs):
        groups.setdefault(t.group_id, []).append(i)
    return list(groups.values())


def sequence_rewards(trajs: list[Trajectory]) -> list[float]:
    """Each trajectory's total reward (0 when it has none)."""
    return [t.reward.total if t.reward is not None else 0.0 for t in trajs]


def group_advantages(trajs: list[Trajectory], estimator: str, rewards: list[float] | None = None) -> list[float]:
    """Advantages per trajectory, computed within groups of equal group_id."""
    index = group_index(trajs)
    sizes = {len(g) for g in index}
    if len(sizes) != 1:
        raise ValueError(f"groups must all have the same size, got sizes {sorted(sizes)}")
    totals = rewards if rewards is not None else sequence_rewards(trajs)
    adv = ADVANTAGES.get(estimator)(torch.tensor([[totals[i] for i in g] for g in index]))  # [B, G]
    out = [0.0] * len(trajs)
    for gi, g in enumerate(index):
        for j, i in enumerate(g):
            out[i] = float(adv[gi, j])
    return out


def loss_masks(trajs: list[Trajectory], *, overlong_filter: bool, compact_filter: bool = False) -> list[list[float]]:
    """[L] per row: 1.0 for a token the loss counts. A trajectory's own loss mask (0 on
    environment tokens) applies when it covers the completion; the overlong filter
    zeroes every token of a completion cut off at the token limit, the compact filter
    every token of an episode a budget cut (turns, context, the environment's budget)."""
    reasons = [t.finish_reason for t in trajs]
    keep = overlong_loss_mask(reasons) if overlong_filter else [1] * len(trajs)
    if compact_filter:
        keep = [k * c for k, c in zip(keep, budget_cut_loss_mask(reasons), strict=True)]
    masks = []
    for t, k in zip(trajs, keep, strict=True):
        lm = t.loss_mask if len(t.loss_mask) == len(t.completion_ids) else [1] * len(t.completion_ids)
        masks.append([float(m * k) for m in lm])
    return masks


def policy_pass(
    trajs: list[Trajectory], batches: MicroBatches, *, proximal: bool
) -> tuple[list[list[float]], list[list[float]]]:
    """(log-probs the ratio can be taken against, rollout-time values) per row, from a
    no-grad pass of the current policy over the rows. Without `proximal` the behaviour
    log-probs stay; a row's values are empty when the stats carry none."""
    prox: list[list[float]] = [list(t.logprobs) for t in trajs]
    values: list[list[float]] = [[] for _ in trajs]
    for rows, st in batches:
        for j, i in enumerate(rows):
            n = len(trajs[i].completion_ids)
            if proximal:
                prox[i] = st.logprobs[j, :n].tolist()
            if st.values is not None:
                values[i] = st.values[j, :n].tolist()
    return prox, values


def reference_kl(trajs: list[Trajectory], batches: MicroBatches, kl_fn: KLFn) -> list[list[float]]:
    """Per-token KL of the behaviour policy to the reference one, from the reference
    model's log-probs (`batches`), per row ([L]; zeros for rows the batches miss)."""
    kl_tok: list[list[float]] = [[0.0] * len(t.completion_ids) for t in trajs]
    for rows, ref in batches:
        L = ref.logprobs.shape[1]
        behav = pad_rows([trajs[i].logprobs for i in rows], L, ref.logprobs.device)
        kl = kl_fn(behav, ref.logprobs) * ref.mask
        for j, i in enumerate(rows):
            kl_tok[i] = kl[j, : len(trajs[i].completion_ids)].tolist()
    return kl_tok


def token_advantages(
    trajs: list[Trajectory],
    masks: list[list[float]],
    algo: AlgoConfig,
    *,
    kl: list[list[float]] | None = None,
    values: list[list[float]] | None = None,
) -> Advantages:
    """Token advantages of every row, by what the estimator needs.

    Token estimators ('gae'): per-token rewards (the sequence reward on the last token, minus kl_coef times
    the per-token `kl` when given) and the rollout-time `values` give GAE advantages,
    whitened over the masked tokens of the batch, and value targets; the sequence
    advantage is the mean of the row's token advantages.
    Otherwise: the group estimator on sequence rewards (minus kl_coef times the row's
    summed `kl` when given), repeated over the row's tokens."""
    metrics: dict[str, float] = {}
    seq_rewards = sequence_rewards(trajs)
    if kl is not None:
        seq_kl = [sum(k) for k in kl]
        metrics["kl_reward"] = sum(seq_kl) / max(len(seq_kl), 1)
    if estimator_needs(algo.advantage).token_rewards:
        if values is None:
            raise ValueError(f"advantage '{algo.advantage}' needs the value head's rollout-time values")
        L = max(1, max(len(t.completion_ids) for t in trajs))
        mask_t = pad_rows(masks, L)
        tok_r = torch.zeros((len(trajs), L))
        for i, t in enumerate(trajs):
            n = len(t.completion_ids)
            if n:
                tok_r[i, n - 1] = seq_rewards[i]
                if kl is not None:
                    tok_r[i, :n] -= algo.kl_coef * torch.tensor(kl[i])
        seq_mask = pad_rows([[1.0] * len(t.completion_ids) for t in trajs], L)
        adv_t, ret_t = ADVANTAGES.get(algo.advantage)(tok_r, pad_rows(values, L), seq_mask, algo.gamma, algo.lam)
        adv_t = whiten(adv_t, mask_t)
        advs = [adv_t[i, : len(t.completion_ids)].tolist() for i, t in enumerate(trajs)]
        rets = [ret_t[i, : len(t.completion_ids)].tolist() for i, t in enumerate(trajs)]
        seq = [sum(a) / max(len(a), 1) for a in advs]
        return Advantages(advs, rets, seq, metrics)
    r = [x - algo.kl_coef * sum(k) for x, k in zip(seq_rewards, kl, strict=True)] if kl is not None else None
    seq = group_advantages(trajs, algo.advantage, r)
    advs = [[a] * len(t.completion_ids) for a, t in zip(seq, trajs, strict=True)]
    return Advantages(advs, [[] for _ in trajs], seq, metrics)


def importance(
    masks: list[list[float]], prox: list[list[float]], behav: list[list[float]], level: str, cap: float
) -> tuple[list[list[float]] | None, dict[str, float]]:
    """(per-row importance weights [L], None with level 'none'; metrics) from behaviour
    to proximal log-probs: their mean absolute gap over the masked tokens, the mean
    weight and the fraction of tokens whose raw weight exceeds the cap."""
    L = max(1, max((len(m) for m in masks), default=0))
    m = pad_rows(masks, L)
    prox_t, behav_t = pad_rows(prox, L), pad_rows(behav, L)
    w = importance_weights(prox_t, behav_t, m, level, cap)
    n_tok = m.sum().clamp(min=1.0)
    metrics = {
        "behaviour_prox_mismatch": float(((prox_t - behav_t).abs() * m).sum() / n_tok),
        "is_weight_mean": float((w * m).sum() / n_tok),
    }
    raw = torch.exp(((prox_t - behav_t) * m).clamp(-20, 20))
    metrics["is_truncated_frac"] = float(((raw > cap).float() * m).sum() / n_tok)
    if level == "none":
        return None, metrics
    return [w[i, : len(mask)].tolist() for i, mask in enumerate(masks)], metrics


def assemble(
    trajs: list[Trajectory],
    masks: list[list[float]],
    old: list[list[float]],
    adv: Advantages,
    *,
    weights: list[list[float]] | None = None,
    values: list[list[float]] | None = None,
) -> list[Prepared]:
    """One `Prepared` row per trajectory; `values` (gae) adds the value loss's inputs."""
    return [
        Prepared(
            traj=t,
            mask=masks[i],
            old=old[i],
            adv=adv.tokens[i],
            weights=weights[i] if weights is not None else None,
            old_values=values[i] if values is not None else None,
            returns=adv.returns[i] if values is not None else None,
        )
        for i, t in enumerate(trajs)
    ]


@dataclass(frozen=True)
class Normalisers:
    """The loss's denominators, counted over the whole batch (every rank's rows), so the
    gradient does not depend on how rows are split into micro-batches or ranks."""

    num_tokens: float  # masked-in tokens (token-mean)
    num_seqs: float  # rows (sequence means)
    norm_len: float  # max_new_tokens (seq-mean-token-sum)

    def kwargs(self) -> dict[str, float]:
        return {"num_tokens": self.num_tokens, "num_seqs": self.num_seqs, "norm_len": self.norm_len}


def normalisers(rows: list[Prepared], norm_len: float) -> Normalisers:
    return Normalisers(float(sum(sum(p.mask) for p in rows)), float(len(rows)), float(norm_len))


def inert(row: Prepared) -> bool:
    """True when every token of the row has a zero advantage or is masked out: its
    policy loss and that loss's gradient are exactly zero."""
    return all(a == 0.0 or m == 0.0 for a, m in zip(row.adv, row.mask, strict=True))
