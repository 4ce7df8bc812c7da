"""The `rlvr` command: one module per subcommand (`COMMANDS`), each with
`add_parser(subparsers)` and `run(args) -> int`, imported when the parser is built, so
each keeps its heavy imports inside `run`.

rlvr train CONFIG [key.path=value ...] [--resume] [--quiet]
rlvr sft CONFIG [key.path=value ...] [--resume] [--quiet]   supervised fine-tuning (sft.data)
rlvr rft CONFIG [key.path=value ...] [--resume] [--quiet]   rejection-sampling fine-tuning
rlvr eval CONFIG [key.path=value ...] [--checkpoint DIR] [--engine hf|vllm|openai --base-url URL] [--json]
rlvr config CONFIG [key.path=value ...]        print the resolved config
rlvr config --keys                             every key, its default and its meaning
rlvr score TASK_FILE COMPLETION_FILE [--config CONFIG] [--task-id ID] [--json]
rlvr sandbox run|check|serve|bench ...
rlvr traces|replay|report|dashboard|export RUN ...   read a run
rlvr repos add SOURCE | list | show NAME        real repositories and their test environments
rlvr tasks check SOURCE [--config CONFIG] [--sample N] [--json]   the task check before training
rlvr domains [--config CONFIG] [--json]         every domain, its environment, task source and count
rlvr feedback import FILE... --store DIR | query --store DIR [SQL]   people's feedback (docs/feedback.md)
rlvr rm train CONFIG [key.path=value ...] | score MODEL FILE         reward models trained on it
rlvr --version

CONFIG may also be given as `--config CONFIG`, and overrides may come anywhere on the
line (before or after flags). Exit codes: 0 success; 1 `sandbox run`: some test failed
(`sandbox check`: a protection is not active); 2 a usage or input error (a one-line
message, no traceback); 3 the sandbox or the generation engine failed (one line); 4 an alert stopped the
run (docs/alerts.md; a checkpoint was saved); 70 an internal error
(a bug: the traceback is printed); 130 interrupted; 141 the output pipe closed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from pathlib import Path

from rlvr.cli.common import package_version, resolve_config_arg, split_overrides
from rlvr.config import ConfigError

COMMANDS = {
    "train": "rlvr.cli.train",
    "sft": "rlvr.cli.sft",
    "rft": "rlvr.cli.rft",
    "eval": "rlvr.cli.eval",
    "config": "rlvr.cli.config",
    "sandbox": "rlvr.cli.sandbox",
    "score": "rlvr.cli.score",
    "traces": "rlvr.cli.traces",
    "replay": "rlvr.cli.replay",
    "report": "rlvr.cli.report",
    "dashboard": "rlvr.cli.report",
    "export": "rlvr.cli.export",
    "repos": "rlvr.cli.repos",
    "feedback": "rlvr.cli.feedback",
    "rm": "rlvr.cli.rm",
    "tasks": "rlvr.cli.tasks",
    "domains": "rlvr.cli.domains",
}
"""Each command's module (one module may serve two: report and dashboard)."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rlvr", description="Reinforcement learning from verifiable rewards.")
    p.add_argument("--version", action="version", version=f"rlvr {package_version()}")
    sub = p.add_subparsers(dest="command", required=True)
    for mod in dict.fromkeys(COMMANDS.values()):
        importlib.import_module(mod).add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    overrides: list[str] = []
    with_config = ("train", "sft", "rft", "eval", "config")
    if argv and (argv[0] in with_config or argv[:2] in (["rm", "train"], ["tasks", "calibrate"])):
        argv, overrides = split_overrides(argv)
    args = parser().parse_args(argv)
    sys.path.insert(0, str(Path.cwd()))  # plugins named by module resolve from where rlvr runs
    try:
        if "config_opt" in args:
            args.overrides = [*args.overrides, *overrides]
            resolve_config_arg(args)
        return int(importlib.import_module(COMMANDS[args.command]).run(args))
    except KeyboardInterrupt:
        print("rlvr: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`rlvr config --keys | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:
        if _is_user_error(e):
            print(f"rlvr: error: {e}", file=sys.stderr)
            return 2
        from rlvr.sandbox.pool import SandboxError

        if isinstance(e, SandboxError):  # this machine's sandbox, not the input: say where to look
            print(f"rlvr: sandbox error: {e} (`rlvr sandbox check` lists the protections here)", file=sys.stderr)
            return 3
        from rlvr.rollout.engine import EngineError
        from rlvr.rollout.runner import RolloutError

        if isinstance(e, EngineError | RolloutError):  # the generation engine (a server, vLLM), not rlvr
            print(f"rlvr: generation failed: {e}", file=sys.stderr)
            return 3
        from rlvr.feedback.judge import JudgeError

        if isinstance(e, JudgeError):  # the judge's server (reward.judge), not rlvr
            print(f"rlvr: the judge failed: {e}", file=sys.stderr)
            return 3
        from rlvr.pipeline.redis_queue import QueueError

        if isinstance(e, QueueError) or type(e).__module__.startswith("redis"):  # queue.backend redis
            print(
                f"rlvr: trajectory queue error: {e} (nothing acknowledged is lost: once Redis is reachable, the "
                "same command resumes from the last checkpoint and the batches still in the stream)",
                file=sys.stderr,
            )
            return 3
        from rlvr.trace.monitor import RunStopped

        if isinstance(e, RunStopped):  # an alert rule with action 'stop' (docs/alerts.md)
            print(f"rlvr: {e}; checkpoint saved, continue with --resume once fixed", file=sys.stderr)
            return 4
        traceback.print_exc()
        print(
            f"rlvr: internal error ({type(e).__name__}): this is a bug in rlvr, not in your input; "
            "please report it with the traceback above",
            file=sys.stderr,
        )
        return 70


def _is_user_error(e: BaseException) -> bool:
    """Errors that name a problem in the user's input or setup: one line, no traceback."""
    from rlvr.feedback.records import FeedbackError
    from rlvr.rollout.model_names import ModelLoadError
    from rlvr.sandbox.spec import SpecError
    from rlvr.tasks import TaskLoadError
    from rlvr.trace.store import StoreError

    return isinstance(
        e, (ConfigError, FileExistsError, ModelLoadError, TaskLoadError, SpecError, StoreError, FeedbackError)
    )


if __name__ == "__main__":
    sys.exit(main())
