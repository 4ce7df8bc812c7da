"""The sharded learner (FSDP2) on CPU with the gloo backend and 2 processes.

Each test spawns its ranks (`torch.multiprocessing.spawn`, one intra-op thread each);
the batch is built once here and handed to every rank, so all ranks and the
single-process reference see the same trajectories. Rank 0 writes what the test
compares (unsharded weights, AdamW state, metrics) to a file.

Tolerances (measured on these batches, lr 1e-3; bounds about 10x above). The sharded
update is the single-process one up to float32 rounding, not bit for bit: each rank runs
its rows as full sequences (the single-process learner shares a group's prompt pass),
its micro-batches hold other rows, the reduce-scatter adds the two ranks' gradients
(a + b, where one process sums over its micro-batches), and the clipping norm sums
squares per shard. Measured: the update (weights after minus before, as one vector)
differs by at most 1.2e-6 relative L2 and 1.3e-6 absolute on any weight; loss by at
most 2.2e-8 absolute (GRPO's first-step loss cancels to ~3e-8, so only an absolute
bound means anything there), grad norm by 3e-7 relative. Bounds: 1e-5 relative and
1e-5 absolute on the update, 2e-6 relative or 1e-7 absolute on loss and grad norm.
(AdamW's first step, lr * g / (|g| + eps), can in principle move a weight whose
gradient is pure rounding noise by up to 2 * lr between two summation orders; no such
weight occurs here.) Gradient checkpointing recomputes the same operations: its update
is identical (0 difference measured), checked with the same bounds. The resumed 1-rank
step differs from the 2-rank one by 4.7e-7 relative, 2.5e-8 absolute.
"""

from __future__ import annotations

import copy
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp

from rlvr.config import load_config
from rlvr.learner import collectives as dist
from rlvr.learner.learner import Learner
from rlvr.rollout.models import TINY, load_policy
from rlvr.types import RewardBreakdown, Trajectory
from tests.integration.helpers import tiny_batch

LR = 1e-3
BASE = [f"train.lr={LR}", "train.micro_batch_size=3"]
CASES: dict[str, list[str]] = {
    "grpo": BASE,
    "rloo_seq_mean": [*BASE, "algo.advantage=rloo", "algo.aggregation=seq-mean-token-mean"],
    "gae_kl_reward": [*BASE, "algo.advantage=gae", "algo.group_size=1", "algo.kl_coef=0.05", "algo.kl_in=reward"],
    "gspo_two_updates": [
        *BASE,
        "algo.advantage=drgrpo",
        "algo.policy_loss=gspo",
        "algo.clip_low=3e-4",
        "algo.clip_high=4e-4",
        "algo.updates_per_batch=2",
    ],
    "decoupled_kl_loss_entropy": [
        *BASE,
        "algo.importance=token",
        "algo.decoupled=true",
        "algo.kl_coef=0.1",
        "algo.entropy_coef=0.01",
        "algo.overlong_filter=true",
    ],
}
REL_UPDATE_TOL = 1e-5  # ||d_sharded - d_single|| / ||d_single||; measured <= 1.2e-6
ABS_WEIGHT_TOL = 1e-5  # any one weight (lr 1e-3); measured <= 1.3e-6
REL_METRIC_TOL = 2e-6  # loss, grad norm; measured <= 3e-7
ABS_METRIC_TOL = 1e-7  # a loss that cancels to ~0 is rounding noise; measured <= 2.2e-8


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spawn(fn: Any, world: int, *args: Any) -> None:
    mp.spawn(fn, args=(world, _free_port(), *args), nprocs=world, join=True)


def _join(rank: int, world: int, port: int) -> None:
    os.environ.update(
        RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    torch.set_num_threads(1)
    dist.init("cpu", timeout_s=120)


def _leave() -> None:
    """A worker's end: leave the group, then exit without the interpreter's teardown. A
    finished worker has written what it reports; what the teardown frees (gloo's threads
    and work items, a learner's FSDP modules) once aborted a rank in CI after its work was
    done ("terminate called without an active exception"), failing 7 tests at once."""
    dist.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _sharded(overrides: list[str], *, gradient_checkpointing: bool = False) -> Any:
    from rlvr.learner.sharded import ShardedLearner

    model, tok = load_policy(TINY, seed=0)
    cfg = load_config(None, overrides)
    return ShardedLearner(model, cfg, pad_id=tok.pad_token_id, gradient_checkpointing=gradient_checkpointing)


def _batch() -> list[Trajectory]:
    """12 rows in 3 groups of 4; the second group's rewards are all equal (inert rows,
    so the ranks run different numbers of real micro-batches), one row overlong."""
    model, tok = load_policy(TINY, seed=0)
    trajs = tiny_batch(model, tok, n_prompts=3, group=4)
    for t in trajs[4:8]:
        t.reward = RewardBreakdown(total=0.5, components={"completion": 0.5})
    for i, t in enumerate(trajs):
        t.finish_reason = "length" if i == 1 else "eos"
    return trajs


@pytest.fixture(scope="module")
def batch() -> list[Trajectory]:
    return _batch()


def _single(overrides: list[str], trajs: list[Trajectory], steps: int = 1) -> tuple[dict[str, torch.Tensor], Any]:
    model, tok = load_policy(TINY, seed=0)
    learner = Learner(model, load_config(None, overrides), pad_id=tok.pad_token_id)
    stats = [learner.step(copy.deepcopy(trajs)) for _ in range(steps)]
    weights = {k: v.detach().clone() for k, v in model.named_parameters()}
    if learner.value_head is not None:
        weights.update({f"value_head.{k}": v.detach().clone() for k, v in learner.value_head.named_parameters()})
    return weights, stats


def _initial() -> dict[str, torch.Tensor]:
    model, _ = load_policy(TINY, seed=0)
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def _compare_update(
    got: dict[str, torch.Tensor], want: dict[str, torch.Tensor], start: dict[str, torch.Tensor]
) -> tuple[float, float]:
    """(relative L2 difference of the updates, largest weight difference)."""
    keys = sorted(want)
    assert set(keys) <= set(got), set(keys) - set(got)
    z = {k: torch.zeros_like(want[k]) for k in keys}
    d_got = torch.cat([(got[k] - start.get(k, z[k])).flatten() for k in keys])
    d_want = torch.cat([(want[k] - start.get(k, z[k])).flatten() for k in keys])
    assert float(d_want.norm()) > 0
    return float((d_got - d_want).norm() / d_want.norm()), float((d_got - d_want).abs().max())


# ---- 1 and 3: one update on 2 ranks equals the single-process update -----------------------------
def _update_worker(rank: int, world: int, port: int, trajs: list[Trajectory], out: str) -> None:
    _join(rank, world, port)
    results: dict[str, Any] = {}
    runs = [(name, ov, False) for name, ov in CASES.items()] + [("grpo_checkpointed", CASES["grpo"], True)]
    runs += [("gae_checkpointed", CASES["gae_kl_reward"], True)]
    for name, overrides, gc in runs:
        learner = _sharded(overrides, gradient_checkpointing=gc)
        stats = learner.step(copy.deepcopy(trajs))
        full = learner.full_state()
        if rank == 0:
            results[name] = {"stats": stats, "weights": full["model"]}
    if rank == 0:
        torch.save(results, out)
    _leave()


@pytest.fixture(scope="module")
def two_rank_updates(batch: list[Trajectory], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("sharded") / "updates.pt"
    t0 = time.perf_counter()
    _spawn(_update_worker, 2, batch, str(out))
    results: dict[str, Any] = torch.load(out, weights_only=False)
    results["_seconds"] = time.perf_counter() - t0
    return results


@pytest.mark.parametrize("case", list(CASES))
def test_two_ranks_make_the_single_process_update(
    case: str, batch: list[Trajectory], two_rank_updates: dict[str, Any]
) -> None:
    want, (want_stats,) = _single(CASES[case], batch)
    got = two_rank_updates[case]
    rel, worst = _compare_update(got["weights"], want, _initial())
    print(f"{case}: update rel diff {rel:.2e}, max abs {worst:.2e}")
    assert rel < REL_UPDATE_TOL and worst < ABS_WEIGHT_TOL
    s = got["stats"]
    print({k: f"{abs(s[k] - want_stats[k]):.1e} / {abs(want_stats[k]):.1e}" for k in ("loss", "grad_norm", "pg_loss")})
    for key in ("loss", "grad_norm", "pg_loss"):
        assert s[key] == pytest.approx(want_stats[key], rel=REL_METRIC_TOL, abs=ABS_METRIC_TOL), key
    for key in ("entropy", "clip_frac", "ratio_mean", "rows_skipped_frac", "kl", "kl_reward", "value_loss"):
        if key in want_stats:
            assert s[key] == pytest.approx(want_stats[key], rel=1e-4, abs=1e-6), key
    assert s["policy_version"] == 1.0


@pytest.mark.parametrize("case", ["grpo", "gae_kl_reward"])
def test_gradient_checkpointing_keeps_the_update(case: str, two_rank_updates: dict[str, Any]) -> None:
    plain, ckpt = two_rank_updates[case], two_rank_updates[f"{case.split('_')[0]}_checkpointed"]
    rel, worst = _compare_update(ckpt["weights"], plain["weights"], _initial())
    print(f"{case}: checkpointed vs plain: update rel diff {rel:.2e}, max abs {worst:.2e}")
    # The recomputed forward is the same computation: equal to float rounding.
    assert rel < REL_UPDATE_TOL and worst < ABS_WEIGHT_TOL
    assert ckpt["stats"]["loss"] == pytest.approx(plain["stats"]["loss"], rel=REL_METRIC_TOL, abs=ABS_METRIC_TOL)
    assert ckpt["stats"]["grad_norm"] == pytest.approx(plain["stats"]["grad_norm"], rel=REL_METRIC_TOL)


# ---- 2: a 2-rank checkpoint resumed on 1 rank -------------------------------------------------------
RESUME = [*BASE, "algo.kl_coef=0.1", "train.warmup_steps=3"]


def _save_worker(rank: int, world: int, port: int, trajs: list[Trajectory], root: str) -> None:
    _join(rank, world, port)
    learner = _sharded(RESUME)
    learner.step(copy.deepcopy(trajs))
    learner.save(Path(root) / "ckpt")
    first = learner.full_state(optimizer=True)
    stats = learner.step(copy.deepcopy(trajs))
    second = learner.full_state(optimizer=True)
    if rank == 0:
        torch.save({"first": first, "second": second, "stats": stats}, Path(root) / "two_ranks.pt")
    _leave()


def _resume_worker(rank: int, world: int, port: int, trajs: list[Trajectory], root: str) -> None:
    _join(rank, world, port)
    learner = _sharded(RESUME)
    learner.load(Path(root) / "ckpt")
    loaded = learner.full_state(optimizer=True)
    version = learner.version
    stats = learner.step(copy.deepcopy(trajs))
    second = learner.full_state(optimizer=True)
    torch.save({"loaded": loaded, "second": second, "stats": stats, "version": version}, Path(root) / "one_rank.pt")
    _leave()


def _optim_tensors(sd: dict[str, Any]) -> dict[str, torch.Tensor]:
    return {f"{fqn}/{k}": torch.as_tensor(v) for fqn, st in sd["state"].items() for k, v in st.items()}


def test_two_rank_checkpoint_resumes_on_one_rank(batch: list[Trajectory], tmp_path: Path) -> None:
    _spawn(_save_worker, 2, batch, str(tmp_path))
    _spawn(_resume_worker, 1, batch, str(tmp_path))
    two = torch.load(tmp_path / "two_ranks.pt", weights_only=False)
    one = torch.load(tmp_path / "one_rank.pt", weights_only=False)
    assert one["version"] == 1
    # what was saved is what loads: weights and AdamW state bit for bit
    assert two["first"]["model"].keys() == one["loaded"]["model"].keys()
    for k, v in two["first"]["model"].items():
        assert torch.equal(v, one["loaded"]["model"][k]), k
    saved, loaded = _optim_tensors(two["first"]["optimizer"]), _optim_tensors(one["loaded"]["optimizer"])
    assert saved.keys() == loaded.keys() and any(k.endswith("exp_avg_sq") for k in saved)
    for k, v in saved.items():
        assert torch.equal(v, loaded[k]), k
    assert two["first"]["optimizer"]["param_groups"][0]["lr"] == one["loaded"]["optimizer"]["param_groups"][0]["lr"]
    # the next step on 1 rank is the 2-rank run's next step (warm-up schedule included)
    rel, worst = _compare_update(one["second"]["model"], two["second"]["model"], two["first"]["model"])
    print(f"resume: second update rel diff {rel:.2e}, max abs {worst:.2e}")
    assert rel < REL_UPDATE_TOL and worst < ABS_WEIGHT_TOL
    for key in ("loss", "grad_norm", "lr", "kl"):
        assert one["stats"][key] == pytest.approx(two["stats"][key], rel=REL_METRIC_TOL, abs=ABS_METRIC_TOL), key
    assert one["stats"]["policy_version"] == two["stats"]["policy_version"] == 2.0


# ---- the training loop under torchrun: rank 0 generates, logs and checkpoints ------------------------
def test_torchrun_trains_as_one_process_and_resumes_on_one(tmp_path: Path) -> None:
    """`rlvr train` under `torchrun --nproc-per-node 2` runs its loop with
    the sharded learner: the same rewards, losses and weights as one process, and its
    checkpoint (Hugging Face model, AdamW state in torch.optim form) resumes in a plain
    one-process run that continues as the uninterrupted one-process run does."""
    import json
    import signal
    import subprocess
    import sys

    from rlvr.train.loop import train
    from tests.integration.toy_env import write_toy_tasks

    repo = Path(__file__).parents[2]
    tasks = write_toy_tasks(tmp_path / "toy.jsonl")
    args = [
        "model.name_or_path=tiny-random",
        "generation.max_new_tokens=6",
        "train.prompts_per_step=2",
        "train.lr=1e-3",
        "train.threads=1",
        "train.micro_batch_size=3",
        f"tasks.source={tasks}",
        "tasks.eval_fraction=0.25",
        "algo.group_size=4",
        "eval.before_training=false",
        "eval.after_training=false",
        f"output_dir={tmp_path}",
    ]
    quick = repo / "examples" / "quickstart.yaml"
    launcher = tmp_path / "launch.py"  # the toy domain registers on import, in every rank
    launcher.write_text(
        "import sys\n"
        "import tests.integration.toy_env\n"
        "from rlvr.cli import main\n"
        "sys.exit(main(['train', '--quiet', *sys.argv[1:]]))\n"  # rlvr train itself, under torchrun
    )
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]
    cmd = [
        *torchrun,
        "--master-port",
        str(_free_port()),
        str(launcher),
        str(quick),
        *args,
        "name=sharded",
        "train.steps=2",
    ]
    env = {**os.environ, "PYTHONPATH": str(repo), "OMP_NUM_THREADS": "1"}
    # its own session: on a timeout the launcher and both ranks are ended together
    proc = subprocess.Popen(
        cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    assert proc.returncode == 0, out[-5000:]
    train(load_config(quick, [*args, "name=single", "train.steps=3"]), quiet=True)
    train(load_config(quick, [*args, "name=sharded", "train.steps=3"]), resume=True, quiet=True)

    def steps(name: str) -> list[dict[str, Any]]:
        rows = [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]
        return [r for r in rows if r.get("event") == "step"]

    sharded, single = steps("sharded"), steps("single")
    assert [r["step"] for r in sharded] == [1, 2, 3]  # 1-2 on 2 ranks, 3 resumed in one process
    for a, b in zip(sharded, single, strict=True):
        assert a["reward/mean"] == b["reward/mean"]  # the same rollouts
        assert a["train/loss"] == pytest.approx(b["train/loss"], rel=1e-5, abs=ABS_METRIC_TOL)
        assert a["train/grad_norm"] == pytest.approx(b["train/grad_norm"], rel=1e-5)
        assert a["weights_fingerprint"] == pytest.approx(b["weights_fingerprint"], rel=1e-7)
    assert sharded[0]["train/loss"] != 0.0 and sharded[0]["train/grad_norm"] > 0


# ---- how a launched run ends: a failed learner call on rank 0, an alert's stop ---------------------
def _launched_worker(rank: int, world: int, port: int, root: str, mode: str) -> None:
    """`run_launched` on each rank, with a stand-in for the loop: rank 0 builds its leading
    learner, then either fails inside a mirrored call ('fail': `save` cannot write
    trainer.pt, a directory, while the follower waits in the barrier after the shards) or
    stops as an alert with action stop does, between learner calls ('stop')."""
    _join(rank, world, port)
    from rlvr.trace.alerts import Alert
    from rlvr.trace.monitor import RunStopped
    from rlvr.train import loop
    from rlvr.train.sharded import run_launched

    def stand_in(cfg: Any, *, learner_factory: Any, **_: Any) -> Any:
        model, tok = load_policy(TINY, seed=0)
        learner = learner_factory(model, cfg, tok.pad_token_id)
        if mode == "fail":
            learner.save(Path(root) / "ckpt")
        raise RunStopped(Alert(1, "hack_rate", "hacking", "stop", 0.5, 0.2, "test stop"))

    loop.train = stand_in  # type: ignore[assignment]
    loop.load_policy_at = lambda cfg, ckpt: load_policy(TINY, seed=0)  # type: ignore[assignment]
    try:
        run_launched(load_config(None, []), timeout_s=120)
        result = "returned"
    except Exception as e:
        result = f"{type(e).__name__}: {e}"
    Path(root, f"rank{rank}.txt").write_text(result)
    if mode == "fail" and rank == 0:
        time.sleep(120)  # rank 0 lingers: the follower must learn of the failure, not of rank 0's exit


def test_a_failed_call_on_rank_0_ends_the_followers(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """Rank 0 fails inside `save` while the follower waits in the barrier after the shards
    (it used to hang there, and rank 0 with it, sending 'close'): rank 0 raises its error,
    and the follower prints it and exits with code 1 within seconds, while rank 0's process
    still runs (so not because it exited, nor by a collective's timeout)."""
    (tmp_path / "ckpt" / "trainer.pt").mkdir(parents=True)
    ctx = mp.spawn(_launched_worker, args=(2, _free_port(), str(tmp_path), "fail"), nprocs=2, join=False)
    rank0, rank1 = ctx.processes
    try:
        deadline = time.monotonic() + 90
        while rank1.exitcode is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert rank1.exitcode == 1, "the follower did not end"
        assert rank0.exitcode is None  # still sleeping: the follower ended on the abort itself
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
            p.join()
    assert "Is a directory" in (tmp_path / "rank0.txt").read_text()
    assert not (tmp_path / "rank1.txt").exists()
    err = capfd.readouterr().err
    assert "rank 1: stopping, another rank failed: rank 0 failed in save(): " in err
    assert "Is a directory" in err


def test_a_stop_between_learner_calls_ends_every_rank_together(tmp_path: Path) -> None:
    """An alert's stop ends rank 0's loop between learner calls: rank 0 closes its learner
    and every rank meets in the last barrier (rank 0 used to skip it, leaving the follower
    to fail there when rank 0 left); rank 0 raises RunStopped, the follower returns."""
    _spawn(_launched_worker, 2, str(tmp_path), "stop")
    assert (tmp_path / "rank0.txt").read_text().startswith("RunStopped: stopped by alert at step 1")
    assert (tmp_path / "rank1.txt").read_text() == "returned"
