"""How fast does the `judge` reward term score replies against a local OpenAI-compatible
server, and what does its cache save? (issue 35's "judge throughput (scores/s) and cache
hit rate")

The server is llama-cpp-python's (`python -m llama_cpp.server`) on the embedded
SmolLM2-135M GGUF file, on the machine's cores; the replies are the quickstart's held-out
tasks' references, each with and without a docstring (so half meet the criterion), in
the conversation a run opens with.

    baseline     a plain client: one request per reply and criterion, one at a time,
                 no cache (what a hand-written httpx loop does)
    judge c=N    rlvr.feedback.judge.Judge with `concurrency: N` (1, 2, 4): the same
                 requests, its pool, retries and cache
    cached       the same replies scored again by the c=2 judge (a resumed or replayed
                 step): its hit rate and time
    run          with --run RUN (a finished run's directory): the share of its training
                 replies a judge's cache would have answered, i.e. (conversation, reply)
                 pairs already seen earlier in the run

Each timed pass is preceded by one untimed request (the server's first-call costs). The
scores of every arm must equal the baseline's (temperature 0): a pool that changed what
is asked would show here.

    .venv/bin/python bench/judge_throughput.py [--replies 32] [--threads 2] [--run runs/quickstart]
    .venv/bin/python bench/judge_throughput.py --report bench/results/judge_throughput.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

CRITERIA = ["Every function in the reply starts with a docstring."]
ASK = "Does the reply meet the criterion? Answer with one word: yes or no."  # as rlvr.feedback.judge asks


def replies(n: int) -> list[tuple[tuple[tuple[str, str], ...], str]]:
    """n (conversation, reply) pairs: held-out references with and without a docstring."""
    from docstring_feedback import _describe, _fenced, _with

    from rlvr.config import load_config
    from rlvr.tasks import load_tasks, split_tasks

    cfg = load_config(ROOT / "examples" / "quickstart.yaml")
    _, held = split_tasks(load_tasks(cfg.tasks.source), cfg.tasks.eval_fraction)
    system = cfg.prompt.system or ""
    out = []
    for t in held:
        if not t.reference or "def " not in t.reference:
            continue
        conv = ((("system", system),) if system else ()) + (("user", t.prompt),)
        out.append((conv, _fenced(_with(t.reference, f'"""{_describe(t.prompt)}"""'))))
        out.append((conv, _fenced(t.reference.rstrip("\n") + "\n")))
        if len(out) >= n:
            break
    return out[:n]


def plain_client(judge: Any, items: list, url: str) -> tuple[list[float | None], float]:
    """The baseline: the judge's own request bodies, posted one at a time, no cache."""
    import httpx

    from rlvr.feedback.judge import yes_probability

    scores: list[float | None] = []
    t0 = time.perf_counter()
    with httpx.Client(timeout=120) as client:
        for conv, reply in items:
            parts = []
            for criterion in CRITERIA:
                question = f"Criterion: {criterion}\n{ASK}"
                body = {"model": "smollm2", "messages": judge._messages(conv, reply, question), "max_tokens": 1,
                        "temperature": 0.0, "logprobs": True, "top_logprobs": 10}  # fmt: skip
                r = client.post(f"{url}/chat/completions", json=body)
                r.raise_for_status()
                parts.append(yes_probability(r.json()["choices"][0]))
            scores.append(None if any(p is None for p in parts) else sum(parts) / len(parts))  # type: ignore[arg-type]
    return scores, time.perf_counter() - t0


def run_share(run: Path) -> dict[str, Any]:
    """The share of a run's training replies already seen (same conversation and reply)
    earlier in the run: what a judge's cache answers there."""
    from rlvr.trace.parquet import read_table

    rows = read_table(str(run / "traces"), "trajectories").to_pylist()
    rows.sort(key=lambda r: (r["step"], r["group_id"] or "", r["sample"] or 0))
    seen: set[tuple[str, str]] = set()
    hits = 0
    for r in rows:
        key = (str(r["task_id"]), str(r["completion"]))  # one task: one conversation
        hits += key in seen
        seen.add(key)
    return {"run": str(run), "replies": len(rows), "cache_hits": hits, "hit_rate": hits / len(rows) if rows else None}


@contextlib.contextmanager
def llama_server(threads: int) -> Iterator[str]:
    from openai_engine import start_server

    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(threads, Path(tmp) / "server.log")
        try:
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=30)


@contextlib.contextmanager
def scripted_server() -> Iterator[str]:
    """--smoke: the scripted judge (rlvr.feedback.rule_judge) applying the criterion."""
    from docstring_feedback import has_docstring

    from rlvr.feedback.rule_judge import RuleJudge

    with RuleJudge(lambda reply: bool(has_docstring(reply)), yes_logprob=-0.05, no_logprob=-3.0).serve() as url:
        yield url


def measure(n: int, threads: int, smoke: bool) -> dict[str, Any]:
    from rlvr.config.reward import JudgeConfig
    from rlvr.feedback.judge import Judge

    items = replies(n)
    with scripted_server() if smoke else llama_server(threads) as url:
        arms: dict[str, Any] = {}

        def judge(c: int) -> Judge:
            return Judge(JudgeConfig(base_url=url, model="smollm2", criteria=CRITERIA, concurrency=c))

        warm = judge(1)
        warm.score([(items[0][0], "warm-up")])
        warm.close()
        base, seconds = plain_client(warm, items, url)
        arms["baseline"] = {"seconds": seconds, "scores_per_s": len(items) / seconds}
        kept = None
        for c in (1, 2, 4):
            j = judge(c)
            t0 = time.perf_counter()
            got = j.score(items)
            s = time.perf_counter() - t0
            arms[f"judge_c{c}"] = {"seconds": s, "scores_per_s": len(items) / s, "requests": j.stats.requests,
                                   "tokens": j.stats.tokens, "same_as_baseline": _same(got, base)}  # fmt: skip
            if c == 2:
                kept = j
            else:
                j.close()
        assert kept is not None
        t0 = time.perf_counter()
        again = kept.score(items)
        s = time.perf_counter() - t0
        hit_rate = kept.stats.cache_hits / len(items)
        arms["cached"] = {"seconds": s, "scores_per_s": len(items) / s if s else None, "hit_rate": hit_rate,
                          "same_as_baseline": _same(again, base)}  # fmt: skip
        kept.close()
    met = sum(1 for s in base if s is not None and s >= 0.5)
    return {"replies": len(items), "criteria": CRITERIA, "threads": threads, "arms": arms,
            "judged_yes": met, "with_docstring": sum(1 for _, r in items if '"""' in r)}  # fmt: skip


def _same(a: list[float | None], b: list[float | None]) -> bool:
    pairs = zip(a, b, strict=True)
    return all((x is None and y is None) or (x is not None and y is not None and abs(x - y) < 1e-6) for x, y in pairs)


def report(saved: dict[str, Any]) -> dict[str, Any]:
    m = saved["machine"]
    scripted = saved.get("server") == "scripted"
    server = "a scripted server" if scripted else "llama-cpp-python's server, SmolLM2-135M Q4_1"
    print(f"judge: {server}, {saved['threads']} threads ({m['cpu']}, {m['kind']}); "
          f"{saved['replies']} replies, {len(saved['criteria'])} criterion")  # fmt: skip
    print(f"{'arm':<12} {'scores/s':>9} {'seconds':>8}  notes")
    for name, a in saved["arms"].items():
        notes = []
        if "same_as_baseline" in a:
            notes.append("scores equal the baseline's" if a["same_as_baseline"] else "SCORES DIFFER from the baseline")
        if "hit_rate" in a:
            notes.append(f"cache hit rate {a['hit_rate']:.2f}")
        rate = a.get("scores_per_s")
        print(f"{name:<12} {rate if rate is not None else float('nan'):9.2f} {a['seconds']:8.2f}  {'; '.join(notes)}")
    print(f"the judge said yes to {saved['judged_yes']} of {saved['replies']} replies; "
          f"{saved['with_docstring']} have a docstring")  # fmt: skip
    if saved.get("run"):
        r = saved["run"]
        print(f"run {r['run']}: {r['cache_hits']} of {r['replies']} training replies seen before "
              f"(a judge's cache hit rate there: {r['hit_rate']:.3f})")  # fmt: skip
    figures = {f"{k}/scores_per_s": v.get("scores_per_s") for k, v in saved["arms"].items()}
    figures["cached/hit_rate"] = saved["arms"]["cached"]["hit_rate"]
    if saved.get("run"):
        figures["run/hit_rate"] = saved["run"]["hit_rate"]
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replies", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2, help="the server's threads (llama.cpp)")
    ap.add_argument("--run", type=Path, help="a finished run: its training replies' cache hit rate")
    ap.add_argument("--smoke", action="store_true", help="4 replies, a scripted judge server, nothing recorded")
    ap.add_argument("--report", metavar="RESULTS")
    ap.add_argument("--out", default=str(ROOT / "bench/results/judge_throughput.json"))
    a = ap.parse_args()
    if a.report:
        print(json.dumps(report(json.loads(Path(a.report).read_text()))))
        return
    if a.replies < 2:
        raise SystemExit("--replies must be at least 2")
    from machine import cpu_kind, cpu_name

    machine = {"cpu": cpu_name(), "kind": cpu_kind(), "cores": os.cpu_count()}
    saved = {"machine": machine, "server": "scripted" if a.smoke else "llama-cpp-python",
             **measure(4 if a.smoke else a.replies, a.threads, a.smoke)}  # fmt: skip
    if a.run:
        saved["run"] = run_share(a.run)
    if not a.smoke:
        Path(a.out).write_text(json.dumps(saved, indent=2))
    print(json.dumps(report(saved)))


if __name__ == "__main__":
    main()
