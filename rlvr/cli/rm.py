"""`rlvr rm`: reward models trained on feedback.

rlvr rm train CONFIG [key.path=value ...] [--quiet]   train on rm.feedback, write <run>/reward_model
rlvr rm score MODEL FILE [--json]                     score {prompt, output} lines with a reward model
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


def run(args: argparse.Namespace) -> int:
    return _train(args) if args.rm_command == "train" else _score(args)


def _train(args: argparse.Namespace) -> int:
    from rlvr.config import load_config
    from rlvr.config.run import check_command_keys
    from rlvr.feedback.rm_train import load_feedback
    from rlvr.rollout.model_names import check_model

    cfg = load_config(args.config, args.overrides)
    check_command_keys(cfg, "rm", args.overrides)
    records = load_feedback(cfg.rm.feedback)  # a bad record stops here, before torch
    check_model(cfg.model.name_or_path)
    out = cfg.run_dir / "reward_model"
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty; choose another run name")
    quiet_libraries()
    from rlvr.feedback.rm_train import prepare, train_rm
    from rlvr.rollout.models import load_policy

    base, tok = load_policy(cfg.model.name_or_path, dtype=cfg.model.dtype, cache_dir=cfg.model.cache_dir, seed=cfg.seed)
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
        res = train_rm(cfg, base, tok, data, out, log)
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
