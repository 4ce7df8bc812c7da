"""Does a learned (or judged) term teach what the tests do not check, without costing
what they do? Issue 35's demonstration, as a user runs it.

The property: a requested output style. The quickstart's system prompt asks for "a
one-line docstring" at the start of each function; the tests check only behaviour, and the
embedded SmolLM2-135M-Instruct follows the request in about a quarter of its replies. The
feedback comes from a rule stated here (bench/docstring_feedback.py: a reviewer prefers
the function with a docstring; length balanced), on the training split's references
only, in the conversation a run opens with. Nothing is hand-labelled.

    1. rlvr rm train on that feedback (the embedded model's backbone); rlvr rm check on it
    2. per seed, four arms of the quickstart (rlvr train, the same steps and prompt):
         verifiable    reward.terms: [completion]
         learned       + {name: learned, weight: W, gate: G} (the reward model of step 1; G is
                       all_tests_pass by default: style among correct answers only, as
                       docs/feedback.md advises; --gate tie_break: only in a group whose
                       verifiable rewards all tie; W: --weight, 0.5 by default)
         learned_open  + {name: learned, weight: W}: no gate, so it also orders the replies of
                       groups where every reply fails (what the audit of step 1 warns about)
         judge         + {name: judge, weight: W, gate: G}, a scripted judge server
                       applying the rule (a 135M judge is near random: the judge arm shows the
                       term's plumbing and gain with a judge that knows the rule)
    3. on the held-out tasks (greedy, before and after): pass@1, and the docstring rate
       (the share of replies with a parsable function whose function has a docstring)

With --warm-start [SHARE], one `rlvr sft` on the training split's references (in the
run's conversation) comes first, and every arm starts from its model: SHARE of them (by a
hash of the task id; 1.0 without a value) carry the rule's one-line docstring, the rest
are bare, so the policy starts writing short docstrings on some replies and passing
replies with one exist from the first step, which the gated term needs (unwarmed, one
seed had none and the gate paid nothing). The baseline is the same warm start followed by
verifiable RL (results: bench/results/feedback_demo_warm.json unless --out says).
--keep-rm DIR keeps the reward model and its figures (DIR/rm, DIR/rm_figures.json);
--reuse-rm DIR takes them from there instead of training one.

    .venv/bin/python bench/feedback_demo.py [--seeds 0 1 2] [--arms verifiable learned judge]
    .venv/bin/python bench/feedback_demo.py --warm-start 0.5 --seeds 0 1 2 --arms verifiable learned
    .venv/bin/python bench/feedback_demo.py --smoke       # tiny models, one step each (the test suite)
    .venv/bin/python bench/feedback_demo.py --report bench/results/feedback_demo.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from docstring_feedback import bundled_python, chat_examples, has_docstring, records  # noqa: E402

SYSTEM = "You are an expert Python programmer. Answer with code only. Start each function with a one-line docstring."
WEIGHT = 0.5
ARMS = ("verifiable", "learned", "learned_open", "judge")
GATES = ("all_tests_pass", "tie_break")
RM_KEYS = ["rm.split_by=family", "rm.held_out=0.1", "rm.batch_size=8", "rm.micro_batch_size=8", "rm.lr=2e-5",
           "rm.epochs=1"]  # fmt: skip
SMOKE = ["model.name_or_path=tiny-random", "generation.max_new_tokens=8", "eval.num_tasks=2", "train.steps=1",
         "train.prompts_per_step=2", "algo.group_size=2"]  # fmt: skip
CRITERION = "Every function in the reply starts with a docstring."
SFT_KEYS = ["sft.epochs=1", "sft.batch_size=8", "sft.micro_batch_size=8", "sft.lr=2e-5", "sft.warmup_steps=2",
            "sft.schedule=cosine", "sft.held_out=0.05", "eval.before_training=false",
            "eval.after_training=false"]  # fmt: skip


def _rlvr(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "rlvr.cli", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"rlvr {args[0]}: exit {done.returncode}: {done.stderr.strip().splitlines()[-3:]}")
    return done


def _training_tasks() -> list[dict]:
    """The bundled python tasks of the quickstart's training split (its held-out tasks are
    what the arms are evaluated on)."""
    from rlvr.tasks import load_tasks, split_tasks

    train, _ = split_tasks(load_tasks("bundled:python_functions"), 0.2)
    ids = {t.id for t in train}
    return [t for t in bundled_python() if t["id"] in ids]


def train_reward_model(out: Path, smoke: bool, extra: list[str] | None = None) -> dict:
    """The rule's feedback on the training split's references (with `extra`: more
    feedback sources, stores or .jsonl files, beside it), a reward model trained on it,
    and its audit; the figures of both."""
    rows = records(_training_tasks(), system=SYSTEM)
    fb = out / "feedback.jsonl"
    fb.write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = ["model.name_or_path=tiny-random", "rm.max_steps=2"] if smoke else []
    _rlvr("rm", "train", "--config", str(ROOT / "examples/quickstart.yaml"), f"output_dir={out}", "name=rm",
          "--quiet", f"rm.feedback=[{', '.join([str(fb), *(extra or [])])}]", *RM_KEYS, *model)  # fmt: skip
    meta = json.loads((out / "rm" / "reward_model" / "rlvr_reward_model.json").read_text())
    check = _rlvr("rm", "check", str(out / "rm" / "reward_model"), "--tasks", "bundled:python_functions",
                  "--cases", "4" if smoke else "24", "--json")  # fmt: skip
    return {"records": len(rows), "extra_feedback": extra or [], "examples": meta.get("examples"),
            "held_out": meta["held_out"], "held_out_before": meta["held_out_before"],
            "length_baseline": meta["length_baseline_accuracy"], "audit": json.loads(check.stdout)}  # fmt: skip


def warm_start(out: Path, smoke: bool, share: float) -> dict:
    """`rlvr sft` on the training split's references in the conversation a run opens with,
    `share` of them carrying the rule's docstring; its model directory and figures."""
    rows = chat_examples(_training_tasks(), system=SYSTEM, share=share)
    data = out / "warm_start.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = ["model.name_or_path=tiny-random", "sft.max_steps=1"] if smoke else []
    t0 = time.perf_counter()
    done = _rlvr("sft", str(ROOT / "examples/quickstart.yaml"), "--plain", f"output_dir={out}", "name=warm",
                 f"prompt.system={SYSTEM}", f"sft.data=[{data}]", *SFT_KEYS, *model)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"rlvr sft: exit {done.returncode}: {done.stderr.strip().splitlines()[-3:]}")
    s = json.loads((out / "warm" / "summary.json").read_text())
    documented = sum(bool(has_docstring(r["messages"][-1]["content"])) for r in rows)
    return {"examples": len(rows), "documented": documented, "share": share, "model": s["model_dir"],
            "wall_s": time.perf_counter() - t0,
            **{k: s.get(k) for k in ("steps", "loss_before", "loss_after", "held_out")}}  # fmt: skip


@contextlib.contextmanager
def rule_judge() -> Iterator[str]:
    """A judge server applying the rule (rlvr.feedback.rule_judge): yes when the quoted reply has a docstring."""
    from rlvr.feedback.rule_judge import RuleJudge

    with RuleJudge(lambda reply: bool(has_docstring(reply)), yes_logprob=-0.05, no_logprob=-3.0).serve() as url:
        yield url


def _rates(store: str) -> dict[str, float]:
    """Docstring rate of the held-out replies, before and after training."""
    from rlvr.trace.parquet import read_table

    rows = read_table(store, "eval_trajectories").to_pylist()
    evals = read_table(store, "evals").to_pylist()
    out = {}
    for e in evals:
        if e["suite"]:
            continue
        mine = [r for r in rows if r["step"] == e["step"]]
        seen = [d for d in (has_docstring(r["completion"] or "") for r in mine) if d is not None]
        out[e["phase"]] = sum(seen) / len(seen) if seen else math.nan
    return out


def run_arm(
    arm: str,
    seed: int,
    out: Path,
    rm: Path,
    judge_url: str,
    smoke: bool,
    tokens: int | None = None,
    start: str | None = None,
    weight: float = WEIGHT,
    gate: str = "all_tests_pass",
) -> dict:
    name = f"{arm}-{seed}"
    gated = f"weight: {weight}, gate: {gate}"
    terms = {"verifiable": "[{name: completion}]",
             "learned": f"[{{name: completion}}, {{name: learned, {gated}}}]",
             "learned_open": f"[{{name: completion}}, {{name: learned, weight: {weight}}}]",
             "judge": f"[{{name: completion}}, {{name: judge, {gated}}}]"}[arm]  # fmt: skip
    model = [f"reward.learned.model={rm}"]
    extra = {"verifiable": [], "learned": model, "learned_open": model,
             "judge": [f"reward.judge.base_url={judge_url}", f"reward.judge.criteria=[{json.dumps(CRITERION)}]",
                       "reward.judge.concurrency=4"]}[arm]  # fmt: skip
    args = ["train", str(ROOT / "examples/quickstart.yaml"), "--plain", f"output_dir={out}", f"name={name}",
            f"seed={seed}", f"prompt.system={SYSTEM}", f"reward.terms={terms}", *extra,
            *(SMOKE if smoke else []), *([f"generation.max_new_tokens={tokens}"] if tokens else []),
            *([f"model.name_or_path={start}"] if start else [])]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    _rlvr(*args)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    s = json.loads((out / name / "summary.json").read_text())
    rates = _rates(str(out / name / "traces"))
    started = yaml.safe_load((out / name / "config.yaml").read_text())["model"]["name_or_path"]
    return {"arm": arm, "seed": seed, "model": started, "pass_before": s["eval_before"]["pass_at_1"],
            "pass_after": s["eval_after"]["pass_at_1"], "doc_before": rates.get("before", math.nan),
            "doc_after": rates.get("after", math.nan), "cpu_s": (after.ru_utime - before.ru_utime) +
            (after.ru_stime - before.ru_stime), "wall_s": wall}  # fmt: skip


def report(rows: list[dict], rm: dict | None, quiet: bool = False, warm: dict | None = None) -> dict:
    for r in rows:
        missing = [k for k in ("arm", "seed", "pass_before", "pass_after", "doc_before", "doc_after") if k not in r]
        if missing:
            raise SystemExit(f"a row lacks {', '.join(missing)}: {r}")
    if rm:
        h = rm["held_out"]
        if rm.get("extra_feedback"):
            print(f"reward model data: the rule's {rm['records']} records and {', '.join(rm['extra_feedback'])}: "
                  f"{rm.get('examples')}")  # fmt: skip
        print(f"reward model: held-out pair accuracy {h.get('pair_accuracy', math.nan):.3f} "
              f"(untrained {rm['held_out_before'].get('pair_accuracy', math.nan):.3f}, length-only "
              f"{rm['length_baseline']:.3f}); audit passed: {rm['audit']['passed']}")  # fmt: skip
    if warm and not quiet:
        documented = warm.get("documented", warm["examples"])
        loss = f"{warm['loss_before']:.4f} -> {warm['loss_after']:.4f}"
        print(f"warm start: rlvr sft on {warm['examples']} references ({documented} documented), {warm['steps']} "
              f"steps, held-out loss {loss}; every arm starts from it")  # fmt: skip
    if not quiet:
        print(
            f"\n{'arm':<13} {'seed':>4} {'pass@1 before':>13} {'after':>6} {'docstrings before':>17} {'after':>6} "
            f"{'CPU s':>6}"
        )
    for r in rows if not quiet else []:
        print(f"{r['arm']:<13} {r['seed']:>4} {r['pass_before']:13.3f} {r['pass_after']:6.3f} "
              f"{r['doc_before']:17.3f} {r['doc_after']:6.3f} {r.get('cpu_s', 0):6.0f}")  # fmt: skip
    keys = ("examples", "documented", "steps", "loss_before", "loss_after")
    figures: dict = {f"warm_start/{k}": warm.get(k) for k in keys} if warm else {}
    for arm in ARMS:
        sel = [r for r in rows if r["arm"] == arm]
        if sel:
            for k in ("pass_before", "pass_after", "doc_before", "doc_after", "cpu_s"):
                figures[f"{arm}/{k}"] = sum(r.get(k, 0.0) for r in sel) / len(sel)
            if warm and all("model" in r for r in sel):  # every run of the arm started from the warm start
                figures[f"{arm}/from_warm_start"] = all(r["model"] == warm["model"] for r in sel)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=list(ARMS))
    ap.add_argument("--smoke", action="store_true", help="tiny models, one step each, nothing recorded")
    ap.add_argument("--report", metavar="RESULTS")
    ap.add_argument(
        "--max-new-tokens", type=int, metavar="N", help="every arm's generation budget (default: the quickstart's)"
    )
    ap.add_argument("--weight", type=float, default=WEIGHT, help=f"the learned/judge term's weight (default {WEIGHT})")
    ap.add_argument(
        "--gate", choices=GATES, default=GATES[0],
        help="the learned and judge arms' gate: all_tests_pass (style among correct replies) or tie_break (style only "
        "in a group whose verifiable rewards are all equal)",
    )  # fmt: skip
    ap.add_argument(
        "--feedback", nargs="+", default=[], metavar="SOURCE",
        help="more feedback for the reward model beside the rule's (a store or .jsonl: e.g. a run's own groups, "
        "rlvr feedback import --from-run)",
    )  # fmt: skip
    ap.add_argument(
        "--warm-start", type=float, nargs="?", const=1.0, metavar="SHARE",
        help="one rlvr sft on the references first (SHARE of them documented; 1.0 without a value); every arm "
        "starts from its model",
    )  # fmt: skip
    ap.add_argument("--keep-rm", metavar="DIR", help="keep the reward model and its figures in DIR for --reuse-rm")
    ap.add_argument("--reuse-rm", metavar="DIR", help="the reward model and figures an earlier --keep-rm DIR kept")
    ap.add_argument(
        "--keep-warm", metavar="DIR", help="keep the warm start's model and figures in DIR for --reuse-warm"
    )
    ap.add_argument("--reuse-warm", metavar="DIR", help="start every arm from the warm start an earlier --keep-warm "
                    "DIR kept (its share with it)")  # fmt: skip
    ap.add_argument("--work", metavar="DIR", help="keep the runs (traces, trajectories) in DIR (default: a temporary "
                    "directory, removed at the end)")  # fmt: skip
    ap.add_argument("--out", help="the results file (default: bench/results/feedback_demo.json, or "
                    "feedback_demo_warm.json with a warm start)")  # fmt: skip
    a = ap.parse_args()
    warmed = a.warm_start is not None or a.reuse_warm
    a.out = a.out or f"bench/results/feedback_demo{'_warm' if warmed else ''}.json"
    if a.reuse_rm and (a.feedback or a.keep_rm):
        raise SystemExit("--reuse-rm takes a kept reward model: it trains none, so --feedback and --keep-rm do nothing")
    if a.reuse_warm and (a.warm_start is not None or a.keep_warm):
        raise SystemExit("--reuse-warm takes a kept warm start and its share: --warm-start and --keep-warm do nothing")
    if a.reuse_warm and not (Path(a.reuse_warm) / "warm_figures.json").is_file():
        raise SystemExit(f"--reuse-warm {a.reuse_warm}: no warm_figures.json there (keep one with --keep-warm)")
    if a.keep_warm and (Path(a.keep_warm) / "warm").exists():
        raise SystemExit(f"--keep-warm {a.keep_warm}: it already holds a warm start")
    a.work = str(Path(a.work).resolve()) if a.work else None  # the arms run rlvr from the checkout's root
    if a.work and Path(a.work).exists() and any(Path(a.work).iterdir()):
        raise SystemExit(f"--work {a.work}: not empty (a run there would mix with what it holds)")
    if a.keep_warm and a.warm_start is None:
        raise SystemExit("--keep-warm keeps the warm start: give --warm-start [SHARE]")
    if a.warm_start is not None and not 0.0 <= a.warm_start <= 1.0:
        raise SystemExit(f"--warm-start: a share between 0 and 1, got {a.warm_start}")
    if a.report:
        saved = json.loads(Path(a.report).read_text())
        print(json.dumps(report(saved["rows"], saved.get("reward_model"), warm=saved.get("warm_start"))))
        return
    rows: list[dict] = []
    warm: dict | None = None

    def save(rm: dict, complete: bool) -> None:  # after every arm: a long run stopped early keeps what it measured
        if a.smoke:
            return
        from machine import cpu_kind, cpu_name

        machine = {"cpu": cpu_name(), "kind": cpu_kind(), "cores": os.cpu_count()}
        import yaml

        # the generation budget the arms ran with: the flag, else the quickstart's own
        quick = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text())["generation"]["max_new_tokens"]
        saved = {"machine": machine, "system": SYSTEM, "weight": a.weight, "gate": a.gate,
                 "max_new_tokens": a.max_new_tokens or quick, "complete": complete, "reward_model": rm,
                 "warm_start": warm, "rows": rows,
                 "figures": report(rows, None, quiet=True, warm=warm) if rows else {}}  # fmt: skip
        Path(a.out).write_text(json.dumps(saved, indent=2))

    work = contextlib.nullcontext(a.work) if a.work else tempfile.TemporaryDirectory()
    with work as tmp, rule_judge() as url:
        out = Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        if a.reuse_rm:
            (out / "rm").symlink_to(Path(a.reuse_rm).resolve() / "rm")
            rm = json.loads((Path(a.reuse_rm) / "rm_figures.json").read_text())["reward_model"]
        else:
            rm = train_reward_model(out, a.smoke, [str(Path(f).resolve()) for f in a.feedback])
            if a.keep_rm:
                keep = Path(a.keep_rm)
                shutil.copytree(out / "rm", keep / "rm", symlinks=True)
                (keep / "rm_figures.json").write_text(json.dumps({"reward_model": rm}, indent=2))
        print(json.dumps({"reward_model": rm}), file=sys.stderr, flush=True)
        if a.reuse_warm:
            kept = Path(a.reuse_warm).resolve()
            warm = {
                **json.loads((kept / "warm_figures.json").read_text())["warm_start"],
                "model": str(kept / "warm" / "model"),
            }
        elif a.warm_start is not None:
            warm = warm_start(out, a.smoke, a.warm_start)
            if a.keep_warm:
                keep = Path(a.keep_warm)
                shutil.copytree(out / "warm" / "model", keep / "warm" / "model")
                (keep / "warm_figures.json").write_text(json.dumps({"warm_start": warm}, indent=2))
        if warm is not None:
            print(json.dumps({"warm_start": warm}), file=sys.stderr, flush=True)
        save(rm, False)
        for seed in a.seeds:
            for arm in a.arms:
                rows.append(run_arm(arm, seed, out, out / "rm" / "reward_model", url, a.smoke, a.max_new_tokens,
                                    warm["model"] if warm else None, a.weight, a.gate))  # fmt: skip
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
                save(rm, False)
    figures = report(rows, rm, warm=warm)
    save(rm, True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
