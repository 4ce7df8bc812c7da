"""Are the repository agent's reference episodes ones a policy could have played? (issue 32)

The supervised stage trains on each task's reference episode (rlvr.repos.reference). An
episode that opens the broken file at once teaches a policy to name files it was never
shown: trained on such episodes, the embedded model read and edited invented paths
(`src/<pkg>/<pkg>.py`) in every evaluation episode (bench/results/repos_learning.json).
The episodes now find the file first, from the prompt's traceback, a test run's, a search
for the broken function or a listing.

For a spread of bundled tasks (both tiers, every project), each reference episode is
played in the sandbox as the supervised stage plays it, and counted: how it located the
bug, whether the environment paid it in full, and whether every path it read or edited
had been shown by an earlier message (rlvr.repos.reference.unseen_paths). The baseline is
the episode as it was before (each changed region read at once): its only message before
the first read is the prompt, so it is grounded exactly when the prompt names the file.

    python bench/repos_reference.py --tasks 40        # needs: rlvr repos add --bundled
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from machine import cpu_kind, cpu_name
from repos_learning import _digest

ROOT = Path(__file__).resolve().parents[1]


def spread(rows: list[dict], n: int) -> list[dict]:
    """`n` tasks taken from each project in turn (both tiers), in the order of a hash of
    their ids, so a larger pick keeps a smaller one's tasks."""
    queues: dict[str, list[dict]] = {}
    for r in sorted(rows, key=lambda r: _digest(r["id"])):
        queues.setdefault(r["tests"]["repo"], []).append(r)
    out: list[dict] = []
    while len(out) < n and any(queues.values()):
        for q in (queues[k] for k in sorted(queues)):
            if q and len(out) < n:
                out.append(q.pop(0))
    return out


def run(args: argparse.Namespace) -> dict:
    import rlvr.repos.agent  # noqa: F401  (registers the repo_agent domain)
    from rlvr.envs.base import EnvSettings
    from rlvr.repos.mine import RepoTask
    from rlvr.repos.reference import locate, unseen_paths
    from rlvr.repos.store import show
    from rlvr.sft.data import Loaded, task_examples
    from rlvr.types import Task

    rows = [json.loads(line) for line in Path(args.source).read_text().splitlines() if line.strip()]
    picked = spread(rows, args.tasks)
    by_how: dict[str, Counter] = {}
    t0 = time.perf_counter()
    for r in picked:
        task = Task.from_dict(r)
        spec = task.tests
        rt = RepoTask.from_dict(spec["task"])
        tree = Path(show(spec["repo"], None).tree)
        how, _ = locate(rt, int(spec.get("tier", 0)), spec.get("held_out", []), rt.unfixed(tree))
        c = by_how.setdefault(how, Counter())
        c["tasks"] += 1
        c["baseline_grounded"] += all(p in task.prompt for p in rt.changed_files())
        out = Loaded()
        examples = task_examples([task], EnvSettings(), check=True, out=out, max_turns=args.max_turns)
        if not examples:  # not paid in full, or refused (a file named before an answer showed it)
            c.update({f"left out: {why}": n for why, n in out.left_out.items()})
            continue
        (ex,) = examples
        c["paid"] += 1
        c["grounded"] += not unseen_paths(ex.messages)
        c["calls"] += sum(m["role"] == "assistant" for m in ex.messages)
        print(f"{task.id:<48} {how:<7} calls {sum(m['role'] == 'assistant' for m in ex.messages):>2}  "
              f"unseen {unseen_paths(ex.messages)}", flush=True)  # fmt: skip
    return {"cpu": cpu_name(), "cpu_kind": cpu_kind(), "tasks": len(picked), "max_turns": args.max_turns,
            "wall_s": time.perf_counter() - t0, "by_how": {k: dict(v) for k, v in sorted(by_how.items())}}  # fmt: skip


def report(result: dict) -> None:
    print(f"{result['tasks']} bundled tasks, reference episodes played in the sandbox ({result['wall_s']:.0f} s); "
          f"{result['cpu']}")  # fmt: skip
    print(f"{'located by':<10} {'tasks':>5} {'paid':>5} {'grounded':>9} {'baseline grounded':>18} {'calls':>6}")
    total: Counter = Counter()
    for how, c in result["by_how"].items():
        total.update(c)
        print(f"{how:<10} {c['tasks']:>5} {c.get('paid', 0):>5} {c.get('grounded', 0):>9} "
              f"{c.get('baseline_grounded', 0):>18} {c.get('calls', 0) / max(1, c.get('paid', 0)):>6.1f}")  # fmt: skip
    print(f"{'all':<10} {total['tasks']:>5} {total['paid']:>5} {total['grounded']:>9} "
          f"{total['baseline_grounded']:>18} {total['calls'] / max(1, total['paid']):>6.1f}")  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=40, help="bundled tasks played (spread over projects and tiers)")
    ap.add_argument("--max-turns", type=int, default=12, help="the episode's turns (examples/repos.yaml: 12)")
    ap.add_argument("--source", default=str(ROOT / "rlvr/tasks/data/repos.jsonl"))
    ap.add_argument("--out", default=str(ROOT / "bench/results/repos_reference.json"))
    ap.add_argument("--report", metavar="RESULTS", help="print a results file and stop")
    a = ap.parse_args()
    if a.report:
        report(json.loads(Path(a.report).read_text()))
        return 0
    if not Path(a.out).resolve().parent.is_dir():
        print(f"repos_reference: --out {a.out}: no such directory", file=sys.stderr)
        return 2
    result = run(a)
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
