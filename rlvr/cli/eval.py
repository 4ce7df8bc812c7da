"""`rlvr eval CONFIG [--checkpoint DIR] [--engine hf|vllm|openai --base-url URL] [--json]`:
pass@1 on the held-out split."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rlvr.cli.common import FMT, checkpoint_model_dir, config_args, generating_model, keys_help
from rlvr.config import load_config


def add_parser(sub: Any) -> None:
    e = sub.add_parser("eval", help="pass@1 on the held-out split", epilog=keys_help(), formatter_class=FMT)
    config_args(e)
    e.add_argument(
        "--checkpoint",
        help="what to evaluate: a run directory (its latest checkpoint), a checkpoint directory or its model/",
    )
    e.add_argument("--json", action="store_true", help="print one JSON object")
    e.add_argument(
        "--engine", help="what generates: hf, vllm, openai or a plugin's engine (engine.kind; default: the config's)"
    )
    e.add_argument(
        "--base-url", help="--engine openai: the server, e.g. http://127.0.0.1:8000/v1 (engine.openai.base_url)"
    )


def run(args: argparse.Namespace) -> int:
    flags = [f"engine.kind={args.engine}"] if args.engine else []
    flags += [f"engine.openai.base_url={args.base_url}"] if args.base_url else []
    cfg = load_config(args.config, [*args.overrides, *flags])
    source = checkpoint_model_dir(args.checkpoint) if args.checkpoint else cfg.model.name_or_path
    from rlvr.rollout.evaluate import evaluate  # after the cheap checks: a bad argument answers at once
    from rlvr.train.preflight import check_run

    eval_tasks = check_run(cfg, evaluating=True, model=source).eval_tasks
    model, tok, source = generating_model(cfg, source)  # the model stack, once the inputs are known to be good
    r = evaluate(model, tok, eval_tasks, cfg)
    out = {
        "model": source,
        "pass_at_1": r.pass_at_1,
        "mean_reward": r.mean_reward,
        "num_tasks": r.num_tasks,
        "by_difficulty": r.by_difficulty,
        "by_domain": r.by_domain,
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"{source}: pass@1 {r.pass_at_1:.3f} on {r.num_tasks} held-out tasks (mean reward {r.mean_reward:.3f})")
        for d, v in r.by_difficulty.items():
            print(f"  difficulty {d}: {v:.3f}")
        if len(r.by_domain) > 1:
            for dom, v in r.by_domain.items():
                print(f"  domain {dom}: {v:.3f}")
    return 0
