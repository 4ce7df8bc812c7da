"""The learner sharded across ranks with FSDP2 (`torch.distributed.fsdp.fully_shard`).

    torchrun --nproc-per-node 2 -m rlvr.train.sharded CONFIG [key=value ...] [--resume]

runs `rlvr train`'s loop on rank 0 (rollouts, evaluation, logs, checkpoints) with a
sharded learner across all ranks (`run_lead` / `run_follower`, in
`rlvr.train.sharded`; rank 0 drives the others as `rlvr.learner.sharded_protocol`
describes, failures included); see docs/sharded.md.

`ShardedLearner` is a `Learner` whose parameters, gradients and AdamW state are sharded
over every rank (each decoder layer one FSDP unit, the embeddings, head and value head
the root unit); `step(trajs)` takes the WHOLE batch, the same on every rank (rank 0's
rollouts broadcast, or every rank's share gathered: `rlvr.learner.collectives.gather_batch`), and
makes the update the single-process learner makes on it:

- rows are dealt to ranks by length (`shard_rows`); each rank runs the no-grad passes
  (proximal log-probs, values, reference KL) on its rows and the lists are gathered, so
  advantages (group statistics, GAE whitening) are computed on the whole batch, the
  same on every rank (`rlvr.learner.prepare`);
- the loss normalisers (tokens, sequences) are summed over the ranks before any
  backward, each rank's micro-batch losses are divided by the batch's, and FSDP's
  reduce-scatter sums (not averages) the ranks' gradients: the gradient is the batch
  loss's;
- every rank runs the same number of forward and backward passes (FSDP gathers and
  reduces parameters inside them): a rank with fewer micro-batches runs masked
  one-token rows whose loss and gradient are exactly zero;
- the gradient is clipped by its norm over all shards; metrics are summed over ranks.

Checkpoints go through `torch.distributed.checkpoint` (`save` / `load`): each rank
writes its shards, and a checkpoint loads on any number of ranks (2 -> 1 re-shards).
`state_dict` / `load_state_dict` give the loop's checkpoint format instead (AdamW's state
unsharded on rank 0, in torch.optim's indexed form), interchangeable with the
single-process `Learner`'s.
`gradient_checkpointing` recomputes each decoder layer's activations in backward.

Differences from the single-process learner: each micro-batch runs prompt and
completion as one full sequence (no prompt pass shared by a group: the shared pass
runs the base model outside the FSDP root's forward), so log-probs and gradients agree
with `Learner`'s to float rounding, not bit for bit.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import torch
import torch.distributed as torch_dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
    set_state_dict,
)
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import FSDPModule, fully_shard
from torch.distributed.tensor import DTensor
from transformers import PreTrainedModel

from rlvr.config import RunConfig
from rlvr.learner import collectives as dist
from rlvr.learner.learner import Learner, MetricSums
from rlvr.learner.logprobs import SharedPrompts, TokenStats, token_stats
from rlvr.learner.prepare import Needs, Normalisers, Prepared
from rlvr.learner.sharded_protocol import LeadFollow, PeerFailed, mirrored
from rlvr.rollout.models import autocast
from rlvr.types import Trajectory

__all__ = [  # the entry points and the protocol's error are defined in their modules, re-exported here
    "PAD_GROUP",
    "TRAINER_FILE",
    "PeerFailed",
    "ShardedLearner",
    "shard_rows",
]

PAD_GROUP = "__rlvr_shard_pad__"
"""group_id of the masked one-token rows that keep the ranks' passes in step."""

TRAINER_FILE = "trainer.pt"  # beside the DCP shards: scheduler, policy version, world size


class _Policy(torch.nn.Module):
    """The model (and value head) as one FSDP root: token stats of a micro-batch are one
    forward of this module, so the root's parameters (embeddings, output head, value
    head) are gathered for the whole computation, the chunked head included."""

    def __init__(self, model: PreTrainedModel, value_head: torch.nn.Module | None = None) -> None:
        super().__init__()
        self.model = model
        self.value_head = value_head

    def forward(
        self,
        prompts: list[list[int]],
        completions: list[list[int]],
        *,
        pad_id: int,
        temperature: float,
        chunk: int,
        compute_dtype: str,
        entropy_grad: bool = False,
        values: bool = False,
    ) -> TokenStats:
        with autocast(next(self.model.parameters()).device, compute_dtype):
            return token_stats(
                self.model,
                prompts,
                completions,
                pad_id=pad_id,
                temperature=temperature,
                chunk=chunk,
                share_prompts=False,
                entropy_grad=entropy_grad,
                value_head=self.value_head if values else None,
            )


def _shard_model(wrapper: _Policy, mesh: DeviceMesh) -> None:
    """Each decoder layer (the model's `_no_split_modules`) one FSDP unit, the rest the
    root's; gradients reduce-scattered as sums (the losses carry the batch's normalisers)."""
    layer_types = set(getattr(wrapper.model, "_no_split_modules", None) or [])
    layers = [m for m in wrapper.model.modules() if type(m).__name__ in layer_types]
    if not layers:
        raise ValueError(f"{type(wrapper.model).__name__} names no decoder layer class (_no_split_modules)")
    for layer in reversed(layers):  # innermost first, should the classes nest
        fully_shard(layer, mesh=mesh)
    fully_shard(wrapper, mesh=mesh)
    for m in [*layers, wrapper]:
        unit = cast(FSDPModule, m)
        unit.set_gradient_divide_factor(1.0)  # a plain sum: no division by the world size
        unit.set_force_sum_reduction_for_comms(True)  # ReduceOp.SUM (gloo has no PREMUL_SUM)


def shard_rows(trajs: Sequence[Trajectory], world: int, rank: int) -> list[int]:
    """Indices of the rows rank `rank` of `world` takes: rows sorted by length (prompt
    and completion, longest first, ties by position) and dealt out in turn, so each
    rank gets about the same number of rows and tokens."""
    order = sorted(range(len(trajs)), key=lambda i: (-(len(trajs[i].prompt_ids) + len(trajs[i].completion_ids)), i))
    return sorted(order[rank::world])


class ShardedLearner(LeadFollow, Learner):
    """`Learner` with FSDP2 across the default process group (`rlvr.learner.collectives.init`).

    Every rank builds it (the weights are rank 0's: they are broadcast before sharding).
    Two ways to drive it:

    - every rank calls the same methods with the same arguments (`step(trajs)` with the
      whole batch; a runner that controls every rank, the tests);
    - `lead=True`: rank 0 alone calls it, as the single-process loop calls `Learner`, and
      the other ranks sit in `follow()`, making each collective call rank 0 makes
      (`step`, `accumulate_gradients`, `save`, `load`, `state_dict`,
      `load_state_dict`, `full_state`) until
      rank 0 calls `close()`. With `publish_to`, rank 0 trains a sharded copy and writes
      the new weights into that unsharded model after every update (rollouts,
      evaluation and Hugging Face checkpoints read it as they read the learner's model).
      A call that fails on rank 0 aborts the process group (`rlvr.learner.sharded_protocol`).
    """

    def __init__(
        self,
        model: PreTrainedModel,
        cfg: RunConfig,
        pad_id: int,
        *,
        mesh: DeviceMesh | None = None,
        gradient_checkpointing: bool | None = None,
        lead: bool = False,
        publish_to: torch.nn.Module | None = None,
    ) -> None:
        if not torch_dist.is_initialized():
            raise RuntimeError("ShardedLearner needs a process group: call rlvr.learner.collectives.init() first")
        self.world, self.rank = torch_dist.get_world_size(), torch_dist.get_rank()
        self.lead, self.publish_to = lead, publish_to if self.rank == 0 else None
        _broadcast_module(model)  # every rank starts from rank 0's weights
        super().__init__(model, cfg, pad_id)  # value head, reference copy: before sharding
        device = next(model.parameters()).device
        self.device = device
        self.mesh = mesh if mesh is not None else dist.mesh(device)
        if gradient_checkpointing is None:
            gradient_checkpointing = cfg.train.gradient_checkpointing
        self.gradient_checkpointing = gradient_checkpointing
        if gradient_checkpointing:
            _enable_checkpointing(model)
        self.policy = _Policy(model, self.value_head)
        _shard_model(self.policy, self.mesh)
        self.ref_policy: _Policy | None = None
        if self.ref_model is not None:
            self.ref_policy = _Policy(self.ref_model)
            _shard_model(self.ref_policy, self.mesh)
        self._build_optimizer()  # over the sharded parameters

    # ---- driving from rank 0 --------------------------------------------------------------------
    def _announced(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        """What the other ranks receive of a call (`LeadFollow._announced`): the arguments,
        except the (large) optimizer state of load_state_dict, which they receive as tensors."""
        if name == "load_state_dict":
            state = dict(args[0] if args else kwargs["state"])
            if "optimizer" in state:
                state["optimizer"] = None
            return (state,), {}
        return args, kwargs

    # ---- forward passes ---------------------------------------------------------------------
    def _stats(
        self,
        model: PreTrainedModel,
        trajs: list[Trajectory],
        *,
        value_head: bool = False,
        entropy_grad: bool = False,
        shared: tuple[SharedPrompts, list[int]] | None = None,
    ) -> TokenStats:
        """One forward of the FSDP root (policy or reference) over these rows."""
        if shared is not None:
            raise ValueError("the sharded learner runs each row in full: no shared prompt pass")
        wrapper = self.policy if model is self.model else self.ref_policy
        if wrapper is None:
            raise ValueError("no such model in this learner")
        return cast(
            TokenStats,
            wrapper(
                [t.prompt_ids for t in trajs],
                [t.completion_ids for t in trajs],
                pad_id=self.pad_id,
                temperature=self.cfg.generation.temperature,
                chunk=self.cfg.train.logprob_chunk,
                compute_dtype=self.cfg.model.compute_dtype,
                entropy_grad=entropy_grad,
                values=value_head,
            ),
        )

    def _chunks(self, trajs: list[Trajectory]) -> list[list[int]]:
        """Micro-batches of row indices: real rows longest first, micro_batch_size at a
        time, then each padding row alone."""
        mbs = self.cfg.train.micro_batch_size
        real = [i for i, t in enumerate(trajs) if t.group_id != PAD_GROUP]
        real.sort(key=lambda i: -len(trajs[i].completion_ids))
        chunks = [real[s : s + mbs] for s in range(0, len(real), mbs)]
        return chunks + [[i] for i, t in enumerate(trajs) if t.group_id == PAD_GROUP]

    def _micro_batches(
        self,
        model: PreTrainedModel,
        trajs: list[Trajectory],
        *,
        value_head: bool = False,
        entropy_grad: bool = False,
        phase: str = "",
    ) -> Iterator[tuple[list[int], TokenStats]]:
        chunks = self._chunks(trajs)
        report = self.on_progress if phase else None
        for done, rows in enumerate(chunks):
            if report is not None:
                report(phase, done, len(chunks))
            yield rows, self._stats(model, [trajs[i] for i in rows], value_head=value_head, entropy_grad=entropy_grad)
        if report is not None:
            report(phase, len(chunks), len(chunks))

    def _padding(self, n_real: int) -> int:
        """How many padding rows this rank adds so that every rank runs as many
        micro-batches as the busiest."""
        mbs = self.cfg.train.micro_batch_size
        mine = -(-n_real // mbs)
        return dist.all_reduce_max(mine, self.device) - mine

    def _pad_traj(self) -> Trajectory:
        return Trajectory(
            task_id=PAD_GROUP,
            domain="",
            group_id=PAD_GROUP,
            prompt_ids=[self.pad_id],
            completion_ids=[self.pad_id],
            logprobs=[0.0],
            loss_mask=[0],
        )

    def _pad_row(self) -> Prepared:
        """A one-token row whose loss and gradient are exactly zero (mask 0, advantage
        0), with the optional fields the real rows carry."""
        values = self.value_head is not None
        return Prepared(
            traj=self._pad_traj(),
            mask=[0.0],
            old=[0.0],
            adv=[0.0],
            weights=[0.0] if self.cfg.algo.importance != "none" else None,
            old_values=[0.0] if values else None,
            returns=[0.0] if values else None,
        )

    # ---- before the first update ----------------------------------------------------------
    def passes(
        self, trajs: list[Trajectory], needs: Needs
    ) -> tuple[list[list[float]], list[list[float]], list[list[float]] | None]:
        """Each rank runs the passes on its rows; the per-row lists are gathered, so every
        rank holds the whole batch's (row order as given)."""
        if not (needs.policy_pass or needs.ref_kl):
            return super().passes(trajs, needs)
        mine = shard_rows(trajs, self.world, self.rank)
        local = [trajs[i] for i in mine]
        local += [self._pad_traj() for _ in range(self._padding(len(local)))]
        prox, values, kl = super().passes(local, needs)
        n = len(mine)
        parts = dist.all_gather_objects((mine, prox[:n], values[:n], kl[:n] if kl is not None else None))
        out_prox: list[list[float]] = [[] for _ in trajs]
        out_values: list[list[float]] = [[] for _ in trajs]
        out_kl: list[list[float]] | None = [[] for _ in trajs] if kl is not None else None
        for rows, p, v, k in parts:
            for j, i in enumerate(rows):
                out_prox[i], out_values[i] = p[j], v[j]
                if out_kl is not None and k is not None:
                    out_kl[i] = k[j]
        return out_prox, out_values, out_kl

    # ---- the update -------------------------------------------------------------------------
    @mirrored
    def step(self, trajs: list[Trajectory]) -> dict[str, float]:
        """The update on the whole batch `trajs` (the same on every rank): see `Learner.step`."""
        version = self.version
        out = super().step(trajs)
        if self.lead and self.version != version:
            self._publish()
        return out

    @mirrored
    def accumulate_gradients(self, batch: list[Prepared] | list[Trajectory]) -> dict[str, float]:
        """This rank's share of the whole batch's gradient (the sum over ranks, which
        FSDP's reduce-scatter forms, is the batch loss's); metrics over every rank."""
        if batch and isinstance(batch[0], Trajectory):
            batch = self.prepare(batch)[0]
        prepared: list[Prepared] = batch  # type: ignore[assignment]
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        mine = [prepared[i] for i in shard_rows([p.traj for p in prepared], self.world, self.rank)]
        norms = self.global_normalisers(mine)
        active = [p for p in mine if not self._inert(p)]
        n_pad = self._padding(len(active))
        if not active and not n_pad:  # no rank has a row with a gradient
            sums = MetricSums()
            self._zero_gradients(sums)
        else:
            sums = self.gradient_pass(active + [self._pad_row() for _ in range(n_pad)], norms)
        merged = MetricSums()
        for s, w in dist.all_gather_objects((sums.sums, sums.weights)):
            for k in s:
                merged.sums[k] = merged.sums.get(k, 0.0) + s[k]
                merged.weights[k] = merged.weights.get(k, 0.0) + w[k]
        (skipped,) = dist.all_reduce_sum([float(len(mine) - len(active))], self.device)
        return merged.result(skipped=skipped, num_seqs=norms.num_seqs)

    def global_normalisers(self, rows: list[Prepared]) -> Normalisers:
        """The loss's denominators over every rank's rows (each rank passes its own)."""
        tokens, seqs = dist.all_reduce_sum([float(sum(sum(p.mask) for p in rows)), float(len(rows))], self.device)
        return Normalisers(tokens, seqs, float(self.cfg.generation.max_new_tokens))

    def _clip_gradients(self) -> float:
        """Clip by the norm of the whole gradient: squares summed over every shard."""
        grads = [p.grad for p in self.parameters() if p.grad is not None]
        local = [g.to_local() if isinstance(g, DTensor) else g for g in grads]
        sq = sum((float(torch.linalg.vector_norm(g.detach(), 2.0)) ** 2 for g in local), 0.0)
        total = math.sqrt(dist.all_reduce_sum([sq], self.device)[0])
        coef = min(self.cfg.train.max_grad_norm / (total + 1e-6), 1.0)
        if not coef >= 1.0:  # clipped, or not finite (nan spreads, as clip_grad_norm_ does)
            with torch.no_grad():
                for g in grads:
                    g.mul_(coef)
        return total

    def _publish(self) -> None:
        """Rank 0: the new weights into `publish_to` (collective: every rank gathers)."""
        full = self.full_state()
        if self.publish_to is not None:
            with torch.no_grad():
                for name, p in self.publish_to.named_parameters():
                    p.copy_(full["model"][name])

    # ---- state --------------------------------------------------------------------------------
    def _fqns(self) -> list[str]:
        """Names of the trained parameters in `parameters()` order, as the FSDP root names
        them: what maps the single-process optimizer state (indexed) onto this one."""
        names = [f"model.{n}" for n, p in self.model.named_parameters() if p.requires_grad]
        if self.value_head is not None:
            names += [f"value_head.{n}" for n, _ in self.value_head.named_parameters()]
        return names

    @mirrored
    def state_dict(self, *, optimizer: bool = True) -> dict[str, Any]:
        """`Learner.state_dict`'s contents, unsharded, on rank 0 ({} on the others;
        collective): AdamW's state in `torch.optim` form, indexed in `parameters()` order,
        so a single-process learner resumes from it and this learner from a
        single-process one, on any number of ranks."""
        opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
        model_sd, optim_state = get_state_dict(self.policy, self.optimizer if optimizer else [], options=opts)
        optim_sd = cast(dict[str, Any], optim_state)
        if self.rank != 0:
            return {}
        out: dict[str, Any] = {"scheduler": self.scheduler.state_dict(), "version": self.version, "value_head": None}
        if optimizer:
            index = {name: i for i, name in enumerate(self._fqns())}
            out["optimizer"] = _copy_tensors(
                {
                    "state": {index[k]: v for k, v in optim_sd["state"].items()},
                    "param_groups": [
                        {**g, "params": [index[k] for k in g["params"]]} for g in optim_sd["param_groups"]
                    ],
                }
            )
        if self.value_head is not None:
            out["value_head"] = {
                k.removeprefix("value_head."): _copy_tensors(v)
                for k, v in model_sd.items()
                if k.startswith("value_head.")
            }
        return {k: out[k] for k in ("optimizer", "scheduler", "version", "value_head") if k in out}

    @mirrored
    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Load what `state_dict` (or a single-process `Learner.state_dict`) returned;
        rank 0's optimizer state and value head are broadcast to the other ranks."""
        opts = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True)
        if "optimizer" in state:
            optim_sd: dict[str, Any] = {}
            if self.rank == 0:
                names = self._fqns()
                plain = state["optimizer"]
                optim_sd = {
                    "state": {names[int(i)]: v for i, v in plain["state"].items()},
                    "param_groups": [
                        {**g, "params": [names[int(i)] for i in g["params"]]} for g in plain["param_groups"]
                    ],
                }
            set_optimizer_state_dict(self.policy, self.optimizer, optim_sd, options=opts)
        if self.value_head is not None:
            head = state.get("value_head")
            if head is None:
                raise ValueError(
                    f"the checkpoint has no value head, but advantage '{self.cfg.algo.advantage}' needs one"
                )
            vh = {f"value_head.{k}": v for k, v in head.items()} if self.rank == 0 else {}
            set_model_state_dict(self.policy, vh, options=dataclasses.replace(opts, strict=False))
        self.scheduler.load_state_dict(state["scheduler"])
        self.version = int(state["version"])

    def _dcp_state(self, *, optimizer: bool) -> dict[str, Any]:
        if optimizer:
            model_sd, optim_sd = get_state_dict(self.policy, self.optimizer)
            return {"model": model_sd, "optimizer": optim_sd}
        model_sd, _ = get_state_dict(self.policy, [])
        return {"model": model_sd}

    @mirrored
    def save(self, path: str | Path, *, optimizer: bool = True) -> Path:
        """Write every rank's shards of the weights (policy and value head) and AdamW's
        state to directory `path` (torch.distributed.checkpoint; collective); rank 0 adds
        the scheduler and version. The reference model is not saved (it is the initial
        policy, reloaded from the config)."""
        path = Path(path)
        dcp.save(self._dcp_state(optimizer=optimizer), checkpoint_id=str(path))
        if self.rank == 0:
            extra = {"scheduler": self.scheduler.state_dict(), "version": self.version, "world_size": self.world}
            torch.save({**extra, "optimizer": optimizer}, path / TRAINER_FILE)
        dist.barrier()
        return path

    @mirrored
    def load(self, path: str | Path) -> None:
        """Load a checkpoint written by `save`, on any number of ranks (collective)."""
        path = Path(path)
        extra = torch.load(path / TRAINER_FILE, weights_only=False)
        state = self._dcp_state(optimizer=bool(extra["optimizer"]))
        dcp.load(state, checkpoint_id=str(path))
        set_state_dict(
            self.policy,
            self.optimizer if "optimizer" in state else [],
            model_state_dict=state["model"],
            optim_state_dict=state.get("optimizer", {}),
        )
        self.scheduler.load_state_dict(extra["scheduler"])
        self.version = int(extra["version"])
        if self.lead:
            self._publish()

    @mirrored
    def full_state(self, *, optimizer: bool = False) -> dict[str, Any]:
        """The unsharded weights (and AdamW state, keyed by parameter name) as CPU
        tensors on rank 0, {} on the others (collective): for a Hugging Face checkpoint,
        rollouts, or a comparison. Weight names are the model's own; the value head's
        start with 'value_head.'."""
        opts = StateDictOptions(full_state_dict=True, cpu_offload=True)
        model_sd, optim_sd = get_state_dict(self.policy, self.optimizer if optimizer else [], options=opts)
        if self.rank != 0:
            return {}
        # copies: on one rank (or a CPU run) the gathered tensors can share the parameters' memory
        weights = {k.removeprefix("model."): _copy_tensors(v) for k, v in model_sd.items()}
        return {"model": weights, "optimizer": _copy_tensors(optim_sd)} if optimizer else {"model": weights}


def _broadcast_module(module: torch.nn.Module) -> None:
    """Rank 0's parameters and buffers into every rank's copy of `module`."""
    if torch_dist.get_world_size() == 1:
        return
    seen: set[int] = set()
    with torch.no_grad():
        for t in [*module.parameters(), *module.buffers()]:
            if id(t) not in seen:
                seen.add(id(t))
                torch_dist.broadcast(t.data, src=0)


def _copy_tensors(obj: Any) -> Any:
    """`obj` with every tensor in its dicts, lists and tuples copied."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().clone()
    if isinstance(obj, dict):
        return {k: _copy_tensors(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_copy_tensors(v) for v in obj)
    return obj


def _enable_checkpointing(model: PreTrainedModel) -> None:
    """Recompute each decoder layer in backward (non-reentrant: FSDP gathers the layer's
    parameters again for the recomputation)."""
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
