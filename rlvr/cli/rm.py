"""`rlvr rm`: reward models trained on feedback.

rlvr rm train CONFIG [key.path=value ...] [--quiet]   train on rm.feedback, write <run>/reward_model
rlvr rm score MODEL FILE [--json]                     score {prompt, output} lines with a reward model
rlvr rm check MODEL | --judge CONFIG  (--feedback SRC ... | --tasks SOURCE) [--cases N] [--json]
                                                      audit a reward model or a judge before a run (exit 1: it failed)
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rlvr.cli.common import FMT, before_after_table, config_args, keys_help, quiet_libraries


def add_parser(sub: Any) -> None:
    p = sub.add_parser("rm", help="reward models trained on people's feedback (docs/feedback.md)")
    rs = p.add_subparsers(dest="rm_command", required=True)
    t = rs.add_parser(
        "train",
        help="train a reward model on rm.feedback (Bradley-Terry on pairs, pointwise on ratings)",
        epilog=keys_help(),
        formatter_class=FMT,
    )
    config_args(t)
    t.add_argument("--quiet", action="store_true", help="no line per evaluation")
    s = rs.add_parser("score", help="score each {prompt, output} line of a JSONL file with a reward model")
    s.add_argument("model", metavar="MODEL", help="a reward model directory (rlvr rm train writes <run>/reward_model)")
    s.add_argument("file", metavar="FILE", help="JSONL: prompt (a string or messages) and output on each line")
    s.add_argument("--json", action="store_true", help="one JSON line per input line, with its score")
    c = rs.add_parser(
        "check",
        help="audit a reward model or a judge: probes, length, agreement with the verifiable reward",
        description="Probe replies (empty, ':', 'Thought process:', an opener alone, one line repeated, filler, a "
        "note to the grader) must not score above a real answer; padding a real answer must not raise its score; "
        "a real answer should score above a wrong one (tasks: a mutant of the reference that fails its tests). "
        "Exit 1 when a check fails (docs/feedback.md).",
    )
    c.add_argument("model", nargs="?", metavar="MODEL", help="a reward model directory")
    c.add_argument("--judge", metavar="CONFIG", help="audit the judge of this run config (reward.judge) instead")
    c.add_argument("--feedback", nargs="+", metavar="SRC", help="cases: preferred outputs of feedback stores/files")
    c.add_argument(
        "--tasks",
        metavar="SOURCE",
        help="cases: tasks' references (and failing mutants), e.g. bundled:python_functions",
    )
    c.add_argument("--cases", type=int, default=32, metavar="N", help="at most N cases (default 32)")
    c.add_argument(
        "--system", metavar="TEXT", help="a system message before each case's prompt (a run's prompt.system)"
    )
    c.add_argument(
        "--max-probe-rate", type=float, default=0.0, metavar="R", help="most share a probe may beat a real answer"
    )
    c.add_argument(
        "--max-length-rise", type=float, default=0.5, metavar="X", help="most score rise from padding, in std"
    )
    c.add_argument("--min-agreement", type=float, default=0.5, metavar="A", help="least share real > wrong")
    c.add_argument("--json", action="store_true", help="the figures as one JSON object")


def run(args: argparse.Namespace) -> int:
    return {"train": _train, "score": _score, "check": _check}[args.rm_command](args)


def _train(args: argparse.Namespace) -> int:
    from rlvr.config import load_config
    from rlvr.config.run import check_command_keys
    from rlvr.feedback.rm_data import load_feedback
    from rlvr.rollout.model_names import check_model

    cfg = load_config(args.config, args.overrides)
    check_command_keys(cfg, "rm", args.overrides)
    records = load_feedback(cfg.rm.feedback)  # a bad record stops here, before torch
    check_model(cfg.model.name_or_path)
    out = cfg.run_dir / "reward_model"
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty; choose another run name")
    quiet_libraries()
    from rlvr.feedback.rm import from_causal_lm
    from rlvr.feedback.rm_data import prepare
    from rlvr.feedback.rm_train import train_rm
    from rlvr.rollout.models import load_policy

    base, tok = load_policy(cfg.model.name_or_path, dtype=cfg.model.dtype, cache_dir=cfg.model.cache_dir, seed=cfg.seed)
    rm = from_causal_lm(base, tok, cfg.seed)
    del base  # the classifier holds its own copy of the backbone
    data = prepare(records, cfg.rm, tok)
    print(f"rlvr rm train: {len(records)} feedback records: {data.line()}")
    cfg.run_dir.mkdir(parents=True, exist_ok=True)
    metrics = (cfg.run_dir / "rm_metrics.jsonl").open("w")

    def log(row: dict[str, Any]) -> None:
        metrics.write(json.dumps(row) + "\n")
        metrics.flush()
        acc = row.get("held_out/pair_accuracy")
        if not args.quiet and row.get("phase") != "after" and (acc is not None or "held_out/point_loss" in row):
            what = f"held-out pair accuracy {acc:.3f}" if acc is not None else ""
            if "held_out/point_loss" in row:
                what += f"{', ' if what else ''}point loss {row['held_out/point_loss']:.4f}"
            print(f"  step {row['step']}: {what}", flush=True)

    try:
        res = train_rm(cfg, rm, tok, data, out, log)
    finally:
        metrics.close()
    from rich.console import Console

    speed = f"{res.tokens / res.seconds:.0f} tokens/s"
    title = f"rlvr rm train: {cfg.name} ({res.steps} steps, {res.seconds / 60:.1f} min, {speed})"
    table = before_after_table(title, None, None)
    show = lambda d, k, f: format(d[k], f) if k in d else "-"  # noqa: E731
    for key, name, f in (
        ("pair_accuracy", "held-out pair accuracy", ".3f"),
        ("pair_loss", "held-out pair loss", ".4f"),
        ("calibration_error", "held-out calibration error", ".3f"),
        ("point_loss", "held-out point loss (BCE)", ".4f"),
        ("point_brier", "held-out Brier score", ".4f"),
    ):
        if key in res.before or key in res.after:
            table.add_row(name, show(res.before, key, f), show(res.after, key, f))
    if res.before.get("pairs"):
        table.add_row("length-only baseline, held-out pair accuracy", "", f"{res.length_baseline:.3f}")
    console = Console()
    console.print(table)
    if res.best_step != res.steps:
        console.print(f"kept the weights of step {res.best_step} (the best held-out loss)")
    console.print(f"reward model: {out}  (rlvr rm score {out} FILE)")
    return 0


def _score(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rlvr.feedback.records import FeedbackError, parse_prompt

    lines = []
    path = Path(args.file)
    if not path.is_file():
        raise FeedbackError(f"{path}: no such file")
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict) or not isinstance(obj.get("output"), str):
                raise FeedbackError("each line needs 'prompt' and 'output' (a string)")
            lines.append((obj, parse_prompt(obj.get("prompt"))))
        except json.JSONDecodeError as e:
            raise FeedbackError(f"{path}:{n}: not JSON ({e.msg})") from None
        except FeedbackError as e:
            raise FeedbackError(f"{path}:{n}: {e}") from None
    quiet_libraries()
    from rlvr.feedback.rm import RewardModel

    rm = RewardModel.load(args.model)
    scores = rm.score([p for _, p in lines], [o["output"] for o, _ in lines])
    for (obj, _), s in zip(lines, scores, strict=True):
        if args.json:
            print(json.dumps({**obj, "score": s}, ensure_ascii=False))
        else:
            print("over max_length" if s is None else f"{s:.4f}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from rlvr.config import ConfigError
    from rlvr.feedback.audit import audit

    if bool(args.model) == bool(args.judge):
        raise ConfigError("rlvr rm check: name a reward model directory, or --judge CONFIG (one of the two)")
    if bool(args.feedback) == bool(args.tasks):
        raise ConfigError("rlvr rm check: cases from --feedback SRC ... or from --tasks SOURCE (one of the two)")
    if args.cases < 1:
        raise ConfigError(f"--cases must be at least 1, got {args.cases}")
    cases = _feedback_cases(args.feedback, args.cases) if args.feedback else _task_cases(args.tasks, args.cases)
    if args.system:
        from dataclasses import replace

        cases = [replace(c, prompt=(("system", args.system), *c.prompt)) for c in cases]
    if args.judge:
        from rlvr.config import load_config
        from rlvr.feedback.judge import Judge

        judge = Judge(load_config(args.judge).reward.judge)
        scorer, what, scale = judge.score, f"the judge of {args.judge}", None
    else:
        quiet_libraries()
        from rlvr.feedback.rm import RewardModel

        rm = RewardModel.load(args.model)
        scorer, what = (lambda items: rm.score([p for p, _ in items], [r for _, r in items])), args.model
        scale = float(rm.meta.get("score_std") or 0.0) or None  # the spread of its training scores
    result = audit(
        scorer,
        cases,
        max_probe_rate=args.max_probe_rate,
        max_length_rise=args.max_length_rise,
        min_agreement=args.min_agreement,
        scale=scale,
    )
    if args.json:
        print(json.dumps(result.to_dict()))
        return 0 if result.passed else 1
    print(f"rlvr rm check: {what} on {result.cases} cases")
    for name, rate in result.probes.items():
        print(f"  probe {name:<16} above the real answer in {rate:6.1%} of cases")
    unit = "std of its training scores" if scale else "std of the real answers' scores"
    print(f"  padding with 4 empty sentences: {result.length_rise:+.2f} {unit} ({result.length_rising_share:.0%} rose)")
    if result.agreement is not None:
        print(f"  real answer above a wrong one: {result.agreement:.0%} of {result.agreement_cases} cases")
    if result.unscored:
        print(f"  unscored replies: {result.unscored}")
    for p in result.problems:
        print(f"FAILED: {p}")
    print("passed" if result.passed else f"failed ({len(result.problems)} checks)")
    return 0 if result.passed else 1


def _feedback_cases(sources: list[str], most: int) -> list[Any]:
    """One case per prompt: a preferred output (a preference's winner, an edit, an
    accepted or well-rated output), first seen first."""
    from rlvr.feedback.audit import Case
    from rlvr.feedback.examples import to_examples
    from rlvr.feedback.records import FeedbackError
    from rlvr.feedback.rm_data import load_feedback

    pairs, points, _ = to_examples(load_feedback(sources), "prompt")
    cases: dict[Any, Case] = {}
    for prompt, real in [(p.prompt, p.chosen) for p in pairs] + [
        (p.prompt, p.output) for p in points if p.label >= 0.5
    ]:
        cases.setdefault(prompt, Case(prompt, real))
    if not cases:
        raise FeedbackError("no preferred outputs in the feedback to audit with")
    return list(cases.values())[:most]


def _task_cases(source: str, most: int) -> list[Any]:
    """Tasks with a reference: the reference as the reply its environment pays, and the
    first mutant of it (rlvr.tasks.mutate) that the verifiable reward fails."""
    from dataclasses import replace

    from rlvr.config import load_config
    from rlvr.envs.base import reference_reply
    from rlvr.envs.scoring import score_completion
    from rlvr.feedback.audit import Case
    from rlvr.tasks import load_tasks
    from rlvr.tasks.mutate import mutants

    cfg = load_config(None, ["reward.hidden_tests=0"])
    out = []
    for task in load_tasks(source):
        real = reference_reply(task) if task.reference else None
        if real is None:
            continue
        wrong = None
        if task.domain in ("python", "repair"):
            for m in mutants(task.reference or "")[:8]:
                reply = reference_reply(replace(task, reference=m.source))
                traj = score_completion(task, reply or "", cfg) if reply else None
                if traj is not None and traj.execution is not None and traj.execution.passed < traj.execution.total:
                    wrong = reply
                    break
        prompt = (("user", task.prompt),)
        out.append(Case(prompt, real, wrong))
        if len(out) >= most:
            break
    return out
