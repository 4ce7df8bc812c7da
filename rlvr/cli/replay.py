"""`rlvr replay`: do one recorded step again, without generating anything.

rlvr replay RUN --step N [--task ID] [--config OTHER.yaml] [--repeat K] [--json]
    Re-judge the step's recorded completions: every assistant turn goes through the task's
    environment (the sandbox) again, then the reward (the run's reward section, or OTHER's),
    and every trajectory whose reward, components, flags or verdicts differ is printed with
    what moved. --repeat K judges each K times and reports verdicts that change between
    runs: flaky tests or a nondeterministic checker.

rlvr replay RUN --step N --train [--json]
    Re-run the learner's update of step N from checkpoint N-1 (or the initial model for
    step 1) on the recorded batch, and check loss, gradient norm and the resulting weights
    against the original (checkpoint N when kept, else the weights fingerprint logged with
    step N). On CPU they match exactly; exit 1 when they do not.

Both read the run directory: config.yaml, trajectories.jsonl (every trajectory in full,
token ids included), metrics.jsonl and checkpoints/.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "replay",
        help="re-judge a step's recorded completions, or re-run its update (--train)",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run", help="the run directory")
    p.add_argument("--step", type=int, required=True, help="the training step (1-based)")
    p.add_argument("--task", help="only this task's trajectories (re-judging)")
    p.add_argument("--config", help="judge with this config's reward and sandbox sections instead of the run's")
    p.add_argument("--repeat", type=int, default=1, help="judge each completion K times (flaky verdicts)")
    p.add_argument("--train", action="store_true", help="re-run the learner's update instead of re-judging")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from rlvr.config import ConfigError
    from rlvr.train.replay import rejudge, replay_update

    run_dir = Path(args.run)
    if not (run_dir / "config.yaml").is_file():
        raise ConfigError(f"{run_dir}: not a run directory (no config.yaml); replay needs the run directory")
    if args.repeat < 1:
        raise ConfigError(f"--repeat must be at least 1, got {args.repeat}")
    if args.train:
        if args.task or args.config or args.repeat != 1:
            raise ConfigError("--train re-runs the whole step's update: --task, --config and --repeat do not apply")
        result = replay_update(run_dir, args.step)
        _print_update(result, args.json)
        return 0 if result.identical else 1
    judged = rejudge(run_dir, args.step, task=args.task, other_config=args.config, repeat=args.repeat)
    _print_rejudge(judged, args.json)
    return 0


def _print_rejudge(judged: list[Any], as_json: bool) -> None:
    changed = [j for j in judged if j.moved]
    flaky = [j for j in judged if j.flaky]
    if as_json:
        print(json.dumps({"judged": len(judged), "changed": [j.to_dict() for j in changed],
                          "flaky": [j.to_dict() for j in flaky]}, default=str))  # fmt: skip
        return
    for j in changed:
        b, a = j.before, j.after
        print(f"{j.task_id} (group {j.group_id}, sample {j.sample}{', dropped' if j.dropped else ''}): "
              f"reward {_fmt(b['reward'])} -> {_fmt(a['reward'])}")  # fmt: skip
        for what in j.moved:
            if what.startswith("component:"):
                k = what.split(":", 1)[1]
                print(f"  {k}: {_fmt(b['components'].get(k))} -> {_fmt(a['components'].get(k))}")
            elif what == "flags":
                print(f"  flags: {b['flags'] or '-'} -> {a['flags'] or '-'}")
            elif what == "execution":
                print(
                    f"  sandbox: {b['status']} {b['passed']}/{b['total']} -> {a['status']} {a['passed']}/{a['total']}"
                )
            elif what.startswith("test:"):
                name = what.split(":", 1)[1]
                print(f"  test {name}: {b['verdicts'].get(name, '-')} -> {a['verdicts'].get(name, '-')}")
    for j in flaky:
        print(f"FLAKY {j.task_id} (group {j.group_id}, sample {j.sample}): {', '.join(j.flaky)}")
    moved: dict[str, int] = {}
    for j in changed:
        for what in j.moved:
            key = what if not what.startswith("test:") else "tests"
            moved[key] = moved.get(key, 0) + 1
    by = ", ".join(f"{k} {v}" for k, v in sorted(moved.items()))
    print(f"{len(judged)} trajectories re-judged: {len(changed)} differ{f' ({by})' if by else ''}"
          f"{f', {len(flaky)} with flaky verdicts' if flaky else ''}")  # fmt: skip


def _fmt(x: Any) -> str:
    return "-" if x is None else f"{x:.4f}" if isinstance(x, float) else str(x)


def _print_update(r: Any, as_json: bool) -> None:
    if as_json:
        checks = [{"what": w, "original": o, "replayed": n, "equal": ok} for w, o, n, ok in r.checks]
        out = {"step": r.step, "from": r.source, "trajectories": r.n_trajectories, "identical": r.identical,
               "weights_checked_against": r.weights_checked_against, "checks": checks}  # fmt: skip
        print(json.dumps(out, default=str))
        return
    print(f"step {r.step}'s update replayed from {r.source} on the recorded batch ({r.n_trajectories} trajectories)")
    for what, orig, new, ok in r.checks:
        print(
            f"  {what:<20} original {_exact(orig):<24} replayed {_exact(new):<24} {'identical' if ok else 'DIFFERENT'}"
        )
    print(f"weights compared with {r.weights_checked_against}: " + ("identical" if r.identical else "NOT identical"))


def _exact(x: Any) -> str:
    return repr(x) if isinstance(x, float) else str(x)
