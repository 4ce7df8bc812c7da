"""`rlvr train` under torchrun: rank 0 runs the loop with a leading sharded learner, the
other ranks follow it (`rlvr.learner.sharded_protocol`), and every rank leaves the same way.

    torchrun --nproc-per-node 2 -m rlvr.train.sharded CONFIG [key=value ...] [--resume]

(`rlvr train` under torchrun lands in `run_launched` too.) See docs/sharded.md.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
from typing import TYPE_CHECKING

from rlvr.config import RunConfig, load_config
from rlvr.learner import collectives as dist
from rlvr.learner.sharded_protocol import abort_group, exit_on_abort

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from rlvr.learner.sharded import ShardedLearner
    from rlvr.train.loop import TrainSummary

__all__ = ["main", "run_follower", "run_launched", "run_lead"]


def run_lead(
    cfg: RunConfig,
    *,
    resume: bool = False,
    quiet: bool = False,
    plain: bool = False,
    learners: list[ShardedLearner] | None = None,
) -> TrainSummary:
    """Rank 0: the whole training loop (`rlvr.train.loop.train`: rollouts, logs,
    checkpoints), with a leading sharded learner in place of `Learner`. Whatever ends
    the loop (an error, an alert's stop), the learner is closed, which releases the
    other ranks; `learners` (when given) receives the learners built."""
    from rlvr.learner.sharded import ShardedLearner
    from rlvr.train import loop

    made: list[ShardedLearner] = [] if learners is None else learners

    def make(model: PreTrainedModel, cfg: RunConfig, pad_id: int) -> ShardedLearner:
        learner = ShardedLearner(copy.deepcopy(model), cfg, pad_id, lead=True, publish_to=model)
        made.append(learner)
        return learner

    try:
        summary = loop.train(cfg, resume=resume, quiet=quiet, plain=plain, learner_factory=make)
    except BaseException:
        for learner in made:  # the loop's error is the one to report, not a failed close
            with contextlib.suppress(Exception):
                learner.close()
        raise
    for learner in made:
        learner.close()
    return summary


def run_follower(cfg: RunConfig) -> None:
    """Ranks other than 0: the model's architecture (weights come from rank 0), then
    rank 0's learner calls until it closes. Ends the process when another rank aborts
    (`rlvr.learner.sharded_protocol.exit_on_abort`)."""
    from rlvr.learner.sharded import ShardedLearner
    from rlvr.train.loop import load_policy_at

    with exit_on_abort(dist.rank()):  # rank 0 may fail before its learner exists, too
        model, tok = load_policy_at(cfg, None)
        ShardedLearner(model, cfg, int(tok.pad_token_id), lead=True).follow()


def main(argv: list[str] | None = None) -> int:
    """`torchrun --nproc-per-node N -m rlvr.train.sharded CONFIG [key=value ...] [--resume]`."""
    parser = argparse.ArgumentParser(
        prog="torchrun --nproc-per-node N -m rlvr.learner.sharded",
        description="rlvr train with the learner sharded (FSDP2) across the launched ranks; "
        "rank 0 generates, logs and writes checkpoints.",
    )
    parser.add_argument("config", help="run config (YAML)")
    parser.add_argument("overrides", nargs="*", help="key.path=value overrides")
    parser.add_argument("--resume", action="store_true", help="resume from the run's latest checkpoint")
    parser.add_argument(
        "--timeout-s", type=float, default=7200.0, help="how long ranks wait for each other (rollouts included)"
    )
    args = parser.parse_args(argv)
    run_launched(load_config(args.config, args.overrides), resume=args.resume, timeout_s=args.timeout_s)
    return 0


def run_launched(
    cfg: RunConfig, *, resume: bool = False, quiet: bool = False, plain: bool = False, timeout_s: float = 7200.0
) -> TrainSummary | None:
    """This rank's part of a launched run (`rlvr train` under torchrun lands here): rank 0
    runs the loop and returns its summary, the others follow its learner and return None.

    When the protocol ended in step (rank 0 closed its learner, the followers received
    the close), every rank meets in a last barrier and leaves the group, even when rank
    0's loop raised (e.g. `RunStopped`: the error still propagates, after the barrier).
    Otherwise (a failed learner call, a failure before the learner existed) this rank
    aborts the group, so that the others do not wait for it (sharded_protocol)."""
    env, _ = dist.init(cfg.model.device, timeout_s=timeout_s)
    made: list[ShardedLearner] = []
    in_step, reason = False, "it stopped before its learner closed"
    try:
        if env.is_main:
            try:
                return run_lead(cfg, resume=resume, quiet=quiet, plain=plain, learners=made)
            finally:
                in_step = bool(made) and all(learner.closed for learner in made)
        run_follower(cfg)
        in_step = True
        return None
    except BaseException as e:
        reason = f"{type(e).__name__}: {' '.join(str(e).split())[:2000]}"
        raise
    finally:
        if in_step:
            dist.shutdown(barrier=True)
        else:
            abort_group(f"rank {env.rank} failed: {reason}")


if __name__ == "__main__":
    import sys

    sys.exit(main())
