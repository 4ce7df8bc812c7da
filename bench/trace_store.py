"""Trace store bench: write a synthetic store of realistic trajectories through
`TraceStore.write_step`, measure its size, and time SQL over it (`rlvr.trace.query`,
`connect` alone, the CLI end to end) beside raw DuckDB over the same files.

    .venv/bin/python bench/trace_store.py                      # 200 steps x 1000 trajectories
    .venv/bin/python bench/trace_store.py --steps 20 --json -  # a quick look, JSON to stdout
    .venv/bin/python bench/trace_store.py --smoke              # 3 steps x 16, once each (the test suite)

Rows look like a mixed-domain run's: completions of 300-800 characters, 2-4 turns (a
fifth of them multi-turn with feedback), 5-10 test verdicts for code domains, four
reward components, a few hack flags, short sandbox output for failures. The numbers
depend on the machine (named in the JSON); on a shared machine the spread is wide, so
medians are reported with min and max. A store that does not hold every trajectory written,
or a query that finds no rows in it, is an error: its time would not be a figure.
--smoke writes nothing under bench/results and prints the results as one JSON object on
the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import pyarrow
import pyarrow.parquet as pq

from rlvr.trace.parquet import TraceStore
from rlvr.trace.query import connect, query
from rlvr.types import ExecutionResult, RewardBreakdown, RunStatus, TestResult, TestStatus, Trajectory, Turn

ROOT = Path(__file__).resolve().parents[1]
RLVR = Path(sys.executable).parent / "rlvr"
DOMAINS = [("python", 0.45), ("cpp", 0.15), ("javascript", 0.1), ("math", 0.2), ("json", 0.1)]
CODE = {"python", "cpp", "javascript"}
GROUP = 8
SMOKE = {"steps": 3, "per_step": 16, "repeats": 1}
"""--smoke: steps, trajectories per step, repeats of each timing."""

# (name, SQL over rlvr's views, the same over raw read_parquet: {traj} / {metrics} are the globs)
QUERIES = [
    (
        "group_by_domain_step",
        "SELECT domain, step, count(*) AS n, avg(reward) AS r FROM trajectories GROUP BY ALL",
        "SELECT domain, step, count(*) AS n, avg(reward) AS r FROM read_parquet('{traj}') GROUP BY ALL",
    ),
    (
        "pass_rate_by_domain",
        "SELECT domain, avg((exec_total > 0 AND exec_passed = exec_total)::DOUBLE) AS pass_rate, "
        "avg((len(reward_flags) > 0)::DOUBLE) AS hack_rate FROM trajectories WHERE exec_total IS NOT NULL GROUP BY 1",
        "SELECT domain, avg((exec_total > 0 AND exec_passed = exec_total)::DOUBLE) AS pass_rate, "
        "avg((len(reward_flags) > 0)::DOUBLE) AS hack_rate FROM read_parquet('{traj}') "
        "WHERE exec_total IS NOT NULL GROUP BY 1",
    ),
    (
        "turns_filter",
        "SELECT step, count(*) AS n FROM turns WHERE role = 'user' AND turn > 1 "
        "AND content LIKE '%AssertionError%' GROUP BY step",
        "SELECT step, count(*) AS n FROM (SELECT step, generate_subscripts(turns, 1) - 1 AS turn, "
        "unnest(turns, recursive := true) FROM read_parquet('{traj}')) "
        "WHERE role = 'user' AND turn > 1 AND content LIKE '%AssertionError%' GROUP BY step",
    ),
    (
        "metrics_series",
        "SELECT step, value FROM metrics WHERE name = 'reward/mean' ORDER BY step",
        'SELECT step, value FROM (SELECT step, unnest(map_keys("values")) AS name, '
        "unnest(map_values(\"values\")) AS value FROM read_parquet('{metrics}')) "
        "WHERE name = 'reward/mean' ORDER BY step",
    ),
    (
        "tests_by_name",
        "SELECT name, avg((status = 'PASSED')::DOUBLE) AS pass FROM tests GROUP BY name",
        "SELECT name, avg((status = 'PASSED')::DOUBLE) AS pass FROM (SELECT unnest(tests, recursive := true) "
        "FROM read_parquet('{traj}')) GROUP BY name",
    ),
]

# ---- synthetic trajectories ----------------------------------------------------------

_TRACEBACK = (
    'Traceback (most recent call last):\n  File "solution.py", line 7, in solve\nIndexError: list index out of range'
)
# Code-like text: statement shapes filled with a handful of names per reply (drawn from
# 2000 made-up words) and small numbers. zstd compresses it about 2.7x in a Parquet
# column, a little less than real code (random 300-800 character slices of this
# repository's source: about 2.9x), so the sizes below err on the large side.
_LETTERS = random.Random(7)
_WORDS = [
    "".join(_LETTERS.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(_LETTERS.randint(2, 9))) for _ in range(2000)
]
_SHAPES = [
    "def {w}_{w}({w}, {w}):",
    "{i}{w} = {w}({w}, {n})",
    "{i}for {w} in range({n}, len({w})):",
    "{i}if {w}[{w}] > {n} and not {w}:",
    "{i}return {w} + {w} * {n}",
    "{i}{w}.append({w}[{n}:{n}])",
    "{i}while {w} < {n}:",
    "{i}# {w} {w} {w} {w}",
    "{i}{w}[{w}] = {w}.get({w}, {n}) + 1",
    "{i}else:",
    "{i}{w}, {w} = {w}, {w} % {n}",
    '{i}print(f"{w}: {{{w}}}")',
    '{i}assert {w} == {n}, "{w} {w}"',
    "{i}yield {w}",
    "{i}{w} = [{w} for {w} in {w} if {w} != {n}]",
    "{i}try:",
    "{i}except {W}Error as {w}:",
    '{i}raise {W}Error("{w} {w} {w}")',
    "import {w}",
    "from {w} import {w}",
]


def _code(rng: random.Random, lo: int = 300, hi: int = 800) -> str:
    want, out, size = rng.randint(lo, hi), [], 0
    names = rng.sample(_WORDS, 6)
    while size < want:
        line = rng.choice(_SHAPES).replace("{i}", " " * rng.choice([4, 4, 8, 8, 12]))
        parts = line.split("{w}")
        line = parts[0] + "".join(rng.choice(names) + rest for rest in parts[1:])
        parts = line.split("{n}")
        line = parts[0] + "".join(str(rng.randint(0, 99)) + rest for rest in parts[1:])
        line = line.replace("{W}", rng.choice(names).capitalize()).replace("{{", "{").replace("}}", "}")
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)[:want]


def _prompt(task: int, domain: str) -> str:
    rng = random.Random(task)
    body = " ".join(rng.choice(_WORDS) for _ in range(60))
    return f"Task {task} ({domain}): write a function that {body}. Reply with one code block."


def _trajectory(rng: random.Random, task: int, domain: str, group: str, lp_pool: list[float]) -> Trajectory:
    system = Turn("system", "You are a careful programmer. Think, then answer with code only.", [0] * 14)
    user = Turn("user", _prompt(task, domain), [0] * 90)
    reply = _code(rng)
    shape = rng.random()
    turns = [system, user] if shape < 0.6 else [user]
    first = Turn("assistant", reply, [0] * (len(reply) // 4), trainable=True)
    turns.append(first)
    if shape >= 0.8:  # multi-turn: feedback, then a second attempt
        i, j = rng.randint(0, 9), rng.randint(0, 99)
        feedback = f"test_{i} failed: AssertionError: assert solve([{j}, {i}], {i}) == [{j * i}]; got [{j}]. Fix it."
        second = _code(rng, 200, 500)
        turns += [Turn("user", feedback, [0] * 30), Turn("assistant", second, [0] * (len(second) // 4), trainable=True)]
    n_completion = sum(len(t.token_ids) for t in turns[turns.index(first) :])  # replies and feedback
    start = rng.randrange(len(lp_pool) - n_completion)
    execution = None
    if domain in CODE:
        n_tests = rng.randint(5, 10)
        passed = n_tests if rng.random() < 0.4 else rng.randint(0, n_tests - 1)
        tests = [
            TestResult(
                f"test_{i}",
                TestStatus.PASSED
                if i < passed
                else rng.choice([TestStatus.FAILED, TestStatus.FAILED, TestStatus.ERROR]),
                "" if i < passed else f"assert solve({i}, {i + 1}) == {i * 3}: got {i * 2}",
                round(rng.uniform(0.001, 0.05), 4),
            )
            for i in range(n_tests)
        ]
        failed = passed < n_tests
        execution = ExecutionResult(
            RunStatus.RUNTIME_ERROR if failed and rng.random() < 0.3 else RunStatus.OK,
            tests,
            stdout="" if rng.random() < 0.8 else "debug: " + "x" * rng.randint(10, 80),
            stderr=(_TRACEBACK if failed and rng.random() < 0.5 else ""),
            wall_time_s=rng.uniform(0.05, 1.5),
            cpu_time_s=rng.uniform(0.02, 1.0),
            peak_memory_mb=rng.uniform(10, 120),
        )
        completion = passed / n_tests
    else:
        completion = 1.0 if rng.random() < 0.5 else 0.0
    flags = (
        [rng.choice(["exit_early", "assert_override", "test_file_write", "sys_exit"])] if rng.random() < 0.03 else []
    )
    comps = {
        "completion": completion,
        "format": 1.0 if rng.random() < 0.9 else 0.0,
        "efficiency": round(rng.random(), 3),
        "length": round(-rng.random() * 0.1, 3),
    }
    total = 0.0 if flags else comps["completion"] + 0.1 * comps["format"] + 0.05 * comps["efficiency"] + comps["length"]
    details = {"hacks": [{"name": f, "line": rng.randint(1, 20), "what": "suspicious call"} for f in flags]}
    return Trajectory(
        task_id=f"{domain}/{task}",
        domain=domain,
        group_id=group,
        turns=turns,
        prompt_ids=[0] * (len(user.token_ids) + 20),
        completion_ids=[0] * n_completion,
        logprobs=lp_pool[start : start + n_completion],
        loss_mask=[1] * n_completion,
        finish_reason=rng.choice(["eos", "eos", "eos", "length"]),
        execution=execution,
        reward=RewardBreakdown(total, comps, details, flags),
        advantage=rng.gauss(0, 1),
        policy_version=0,
        timings={
            "generate_s": 12.5,
            "env_s": rng.uniform(0.05, 2),
            "retries": 0.0,
            "turns": 2.0 if shape >= 0.8 else 1.0,
        },
    )


def _step(rng: random.Random, step: int, per_step: int, lp_pool: list[float]) -> list[tuple[Trajectory, bool]]:
    out = []
    names, weights = zip(*DOMAINS, strict=True)
    for g in range(per_step // GROUP):
        domain = rng.choices(names, weights)[0]
        task = rng.randrange(5000)
        trained = rng.random() < 0.85
        for _ in range(GROUP):
            out.append((_trajectory(rng, task, domain, f"s{step}-g{g}", lp_pool), trained))
    return out


def _metrics(rng: random.Random, step: int) -> dict[str, float]:
    m = {"reward/mean": rng.random(), "reward/pass_rate": rng.random(), "hack/rate": rng.random() * 0.05}
    for d, _ in DOMAINS:
        m |= {f"domain/{d}/reward/mean": rng.random(), f"domain/{d}/reward/pass_rate": rng.random()}
    for k in ("loss", "grad_norm", "entropy", "kl", "clip_frac", "lr", "logprob_mismatch", "staleness_mean"):
        m[f"train/{k}"] = rng.random()
    for k in ("rollout_wait_s", "train_s", "tokens_per_s", "gen_tokens_per_s"):
        m[f"time/{k}"] = rng.random() * 100
    return m


# ---- measuring -----------------------------------------------------------------------


def _stats(times: list[float]) -> dict[str, float]:
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}


def _timed(fn: Any, repeats: int) -> tuple[dict[str, float], Any]:
    times, result = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return _stats(times), result


def _write_store(root: str, steps: int, per_step: int) -> dict[str, Any]:
    rng = random.Random(0)
    lp_pool = [-abs(rng.gauss(0, 1.2)) for _ in range(20_000)]
    store = TraceStore(root)
    build, write = [], []
    for step in range(1, steps + 1):
        t0 = time.perf_counter()
        trajs = _step(rng, step, per_step, lp_pool)
        t1 = time.perf_counter()
        store.write_step(step, trajs, _metrics(rng, step))
        write.append(time.perf_counter() - t1)
        build.append(t1 - t0)
        if step % 20 == 0 or step == steps:
            print(f"  wrote step {step}/{steps} ({statistics.median(write):.3f} s/step median)", file=sys.stderr)
    return {"build_s_per_step": statistics.median(build), "write_step": _stats(write), "write_total_s": sum(write)}


def _size(root: str, table: str) -> int:
    return sum(p.stat().st_size for p in Path(root, table).glob("*.parquet"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--per-step", type=int, default=1000, help="trajectories per step (a multiple of 8)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--store", help="where to write the store (default: a temporary folder, removed after)")
    p.add_argument("--json", default=str(ROOT / "bench/results/trace_store.json"), help="result file ('-': stdout)")
    p.add_argument("--smoke", action="store_true", help="3 steps x 16 trajectories, once each; JSON on the last line")
    args = p.parse_args(argv)
    if args.smoke:
        args.steps, args.per_step, args.repeats = SMOKE["steps"], SMOKE["per_step"], SMOKE["repeats"]
    root = args.store or tempfile.mkdtemp(prefix="rlvr-trace-bench-")
    if args.store and Path(root).exists():
        shutil.rmtree(root)
    n = args.steps * (args.per_step // GROUP) * GROUP
    started = time.perf_counter()
    try:
        print(f"writing {n} trajectories ({args.steps} steps) to {root}", file=sys.stderr)
        writing = _write_store(root, args.steps, args.per_step)
        traj_bytes, metric_bytes = _size(root, "trajectories"), _size(root, "metrics")
        stored = sum(pq.ParquetFile(f).metadata.num_rows for f in Path(root, "trajectories").glob("*.parquet"))
        if stored != n:
            raise SystemExit(f"the store holds {stored} trajectories of the {n} written: there is no figure")
        result: dict[str, Any] = {
            "machine": {
                "cpu_count": os.cpu_count(),
                "platform": platform.platform(),
                "processor": platform.processor() or platform.machine(),
                "python": platform.python_version(),
                "duckdb": duckdb.__version__,
                "pyarrow": pyarrow.__version__,
            },
            "store": {
                "trajectories": n,
                "steps": args.steps,
                "parts_per_table": args.steps,
                "trajectories_bytes": traj_bytes,
                "metrics_bytes": metric_bytes,
                "bytes_per_1000_trajectories": round(traj_bytes / n * 1000),
            },
            "write": writing,
            "repeats": args.repeats,
        }
        connect_stats, _ = _timed(lambda: connect(root).close(), args.repeats)
        result["connect"] = connect_stats
        con = connect(root)
        globs = {"traj": f"{root}/trajectories/*.parquet", "metrics": f"{root}/metrics/*.parquet"}
        result["queries"] = {}
        for name, sql, raw in QUERIES:
            rlvr_stats, (_, rows) = _timed(lambda sql=sql: query(root, sql), args.repeats)
            warm_stats, _ = _timed(lambda sql=sql: con.sql(sql).fetchall(), args.repeats)
            raw_sql = raw.format(**globs)
            base_stats, base_rows = _timed(
                lambda raw_sql=raw_sql: duckdb.connect().sql(raw_sql).fetchall(), args.repeats
            )
            assert sorted(map(str, rows)) == sorted(map(str, base_rows)), f"{name}: rlvr and raw DuckDB differ"
            if not rows:
                raise SystemExit(f"{name}: no rows over a store of {n} trajectories: its time is not a figure")
            result["queries"][name] = {
                "sql": sql,
                "rows": len(rows),
                "rlvr_query": rlvr_stats,  # rlvr.trace.query.query: connect + run + fetch
                "rlvr_connected": warm_stats,  # the same SQL on a connection already made
                "duckdb_raw": base_stats,  # duckdb over read_parquet('<glob>'), fresh connection
            }
        con.close()
        sql = QUERIES[0][1]
        cli_stats, out = _timed(
            lambda: subprocess.run(
                [str(RLVR), "traces", root, sql, "--csv"], capture_output=True, text=True, check=True
            ),
            args.repeats,
        )
        assert len(out.stdout.splitlines()) == result["queries"]["group_by_domain_step"]["rows"] + 1
        result["cli_traces_csv"] = {"sql": sql, **cli_stats}
        startup, _ = _timed(
            lambda: subprocess.run([str(RLVR), "--version"], capture_output=True, check=True), args.repeats
        )
        result["cli_startup"] = startup  # `rlvr --version`: the interpreter and imports alone
        result["total_s"] = time.perf_counter() - started
    finally:
        if not args.store:
            shutil.rmtree(root, ignore_errors=True)
    _print_table(result)
    text = json.dumps(result, indent=2)
    if args.smoke:  # a check, not a figure: nothing recorded
        print(json.dumps(result))
    elif args.json == "-":
        print(text)
    else:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text + "\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


def _print_table(r: dict[str, Any]) -> None:
    s, w = r["store"], r["write"]
    print(f"machine: {r['machine']['cpu_count']} CPUs, {r['machine']['platform']}")
    print(
        f"store: {s['trajectories']} trajectories in {s['steps']} parts, {s['trajectories_bytes'] / 1e6:.1f} MB "
        f"({s['bytes_per_1000_trajectories'] / 1e3:.0f} kB per 1000 trajectories), "
        f"metrics {s['metrics_bytes'] / 1e3:.0f} kB"
    )
    print(
        f"write_step: {w['write_step']['median_s'] * 1e3:.0f} ms per step of {s['trajectories'] // s['steps']} "
        f"(min {w['write_step']['min_s'] * 1e3:.0f}, max {w['write_step']['max_s'] * 1e3:.0f}); "
        f"building the Trajectory objects {w['build_s_per_step'] * 1e3:.0f} ms per step"
    )
    c = r["connect"]
    print(f"connect(): median {c['median_s'] * 1e3:.0f} ms (min {c['min_s'] * 1e3:.0f}, max {c['max_s'] * 1e3:.0f})")
    print(f"{'query (median / min / max, ms)':<26} {'query()':>20} {'connected':>20} {'raw duckdb':>20}")

    def cell(x: dict[str, float]) -> str:
        return f"{x['median_s'] * 1e3:.0f} / {x['min_s'] * 1e3:.0f} / {x['max_s'] * 1e3:.0f}"

    for name, q in r["queries"].items():
        print(f"{name:<26} {cell(q['rlvr_query']):>20} {cell(q['rlvr_connected']):>20} {cell(q['duckdb_raw']):>20}")
    print(f"{'rlvr traces ... --csv':<26} {cell(r['cli_traces_csv']):>20}   (rlvr --version: {cell(r['cli_startup'])})")


if __name__ == "__main__":
    sys.exit(main())
