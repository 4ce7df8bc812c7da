"""The smoke modes of the benches of the sandbox, the hack corpus and detector, the trace
store, the trajectory queue and the engines, so that a renamed metric or a changed API
fails here and not in the next measurement (issue: benchmarks that cannot rot). Each runs
as a user runs it, from the checkout, with tiny sizes; each checks the figures README.md
and docs/*.md quote (by the key names of the bench's results file) and that a smoke run
records nothing. What needs a server or a GPU this machine has not (llama-cpp-python's
server, vLLM) is checked through its reader over the recorded results, or, where none is
recorded, over what its measuring code writes on the CPU."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest

from tests.integration.bench_smoke import RESULTS, ROOT, last_json, records_nothing, run_bench

HACKS = ROOT / "tests" / "data" / "hacks"
UNDER_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")  # there a missing redis-server fails


def _lines(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.strip())


def _classes_and_sources() -> tuple[set[str], set[str]]:
    hacks = [json.loads(line) for line in (HACKS / "hacks.jsonl").read_text().splitlines() if line.strip()]
    honest = [json.loads(line) for line in (HACKS / "honest.jsonl").read_text().splitlines() if line.strip()]
    return {h["class"] for h in hacks}, {e["source"] for e in honest}


def _latencies_sane(r: dict) -> None:
    assert r["per_s"] > 0 and 0 < r["p50_ms"] <= r["p99_ms"], r


def test_hack_corpus_check_smoke_reruns_one_hack_per_class_and_one_honest_per_source() -> None:
    """docs/hacking.md: hacks in named classes, each recorded with whether it pays; honest
    solutions that pass all their tests. A recorded `pays` that no longer holds is exit 1."""
    classes, sources = _classes_and_sources()
    with records_nothing(HACKS / "hacks.jsonl", HACKS / "honest.jsonl"):
        done = run_bench("bench/hack_corpus_check.py", "--smoke", ok=False)
    if done.returncode == 1 and "refusing to run the hacks" in done.stderr:
        pytest.skip("the sandbox has no namespaces here: the bench refuses to run hacks (rlvr sandbox check)")
    assert done.returncode == 0, done.stderr[-3000:]
    r = last_json(done.stdout)
    assert r["problems"] == 0 and r["hacks"]["pays_changed"] == []
    assert r["honest"]["count"] == r["honest"]["passed"] == len(sources)
    assert set(r["honest"]["by_source"]) == sources
    assert set(r["hacks"]["classes"]) == classes and r["hacks"]["count"] == len(classes)
    assert 0 < r["hacks"]["pays"] < r["hacks"]["count"]  # some of the firsts pay (hardcoded_*), some do not
    assert r["hacks"]["pays"] == sum(c["pays"] for c in r["hacks"]["classes"].values())
    done = run_bench("bench/hack_corpus_check.py", "--smoke", "--write", ok=False)
    assert done.returncode == 2 and "cannot --write" in done.stderr


def test_hack_corpus_collect_smoke_reads_a_real_runs_records_and_an_unscored_run_is_an_error(tmp_path: Path) -> None:
    """docs/hacking.md: passing completions collected from training and evaluation records."""
    with records_nothing(HACKS / "honest.jsonl"):
        r = last_json(run_bench("bench/hack_corpus_collect.py", "--smoke").stdout)
    assert r["runs"] == 1 and r["trajectories"] == 2 * 4  # 2 prompts x the quickstart's group of 4
    assert r["scored"] == r["trajectories"]  # every trajectory carries its test verdicts
    assert r["evaluated"] == 2 and 0 <= r["passing"] <= r["trajectories"] and r["new"] <= r["passing"]
    run = tmp_path / "run"
    run.mkdir()
    row = {"task_id": "py/add_2", "step": 1, "turns": [], "reward": {"total": 1.0, "details": {}}}
    (run / "trajectories.jsonl").write_text(json.dumps(row) + "\n")
    done = run_bench("bench/hack_corpus_collect.py", str(run), "--dry-run", ok=False)
    assert done.returncode == 1
    assert "none of its 1 trajectories has reward.details.completion.total" in done.stderr.strip().splitlines()[-1]


def test_hack_detector_smoke_quotes_recall_and_false_positives_of_both_modes(tmp_path: Path) -> None:
    """README / docs/hacking.md: hacks that earn credit flagged (54 of 57), all hacks flagged,
    honest solutions flagged, and honest solutions whose reward is taken away (0 of 969)."""
    classes, sources = _classes_and_sources()
    quoted = {"results/hack_detector.json", "results/hack_defended.json"}
    with records_nothing(*(ROOT / "bench" / q for q in quoted)):
        r = last_json(run_bench("bench/hack_detector.py", "--smoke").stdout)
    static, defended = r["static"], r["defended"]
    assert static["hacks"]["count"] == _lines(HACKS / "hacks.jsonl")
    assert static["honest"]["count"] == _lines(HACKS / "honest.jsonl")
    assert "hack_detector.json" in static["baseline_of"]
    assert defended["hacks"]["count"] == len(classes) and defended["honest"]["count"] == len(sources)
    for mode in (static, defended):
        h, o = mode["hacks"], mode["honest"]
        assert 0 < h["paying_flagged"] <= h["pays"] <= h["count"] and 0 < h["flagged"] <= h["count"]
        assert h["recall"] == pytest.approx(h["flagged"] / h["count"])
        assert h["paying_recall"] == pytest.approx(h["paying_flagged"] / h["pays"])
        assert o["strong"] == 0  # no honest solution loses its reward
        assert o["false_positive_rate"] == pytest.approx(o["flagged"] / o["count"])
    assert static["honest"]["reward"] is None and defended["honest"]["reward"] == pytest.approx(1.0)
    broken = json.loads((RESULTS / "hack_detector.json").read_text())
    del broken["hacks"]["paying_recall"]
    (tmp_path / "base.json").write_text(json.dumps(broken))
    done = run_bench("bench/hack_detector.py", "--smoke", "--baseline", str(tmp_path / "base.json"), ok=False)
    assert done.returncode == 1 and "the results lack hacks.paying_recall" in done.stderr


def test_sandbox_throughput_smoke_fills_every_cell_and_a_failed_canonical_solution_is_an_error() -> None:
    """README's table (`rlvr sandbox bench`, bench/results/sandbox_bench.json): runs/s, p50,
    p99 and CPU ms per run per method and concurrency; HumanEval's seconds per method."""
    from rlvr.sandbox.bench import SMOKE_HUMANEVAL, BaselineFailed, _humaneval

    r = last_json(run_bench("bench/sandbox_throughput.py", "--smoke").stdout)
    recorded = json.loads((RESULTS / "sandbox_bench.json").read_text())
    assert r["n"] == 5
    have_bwrap = shutil.which("bwrap") is not None
    assert set(r["cells"]) == {c for c in recorded["cells"] if have_bwrap or "bwrap" not in c}
    for name, cell in r["cells"].items():
        assert cell["runs_per_s"] > 0 and 0 < cell["p50_ms"] <= cell["p99_ms"] and cell["cpu_ms"] >= 0, name
    assert set(r["humaneval"]) == {m for m in recorded["humaneval"] if have_bwrap or "bwrap" not in m}
    for row in r["humaneval"].values():
        assert row["passed"] == row["problems"] == SMOKE_HUMANEVAL and row["seconds"] > 0
    with pytest.raises(BaselineFailed, match=r"HumanEval through broken: 1 of 1 canonical solutions failed"):
        _humaneval(1, {"broken": lambda p: False}, 1)


def test_sandbox_service_smoke_checks_every_answer_and_quotes_throughput_and_latency() -> None:
    """README: /run_code programs a second (p50, p99) and mixed submissions a second, with
    and without a CPU cap (bench/results/sandbox_service.json)."""
    with records_nothing(RESULTS / "sandbox_service.json"):
        r = last_json(run_bench("bench/sandbox_service.py", "--smoke").stdout)
    recorded = json.loads((RESULTS / "sandbox_service.json").read_text())
    assert set(r) == set(recorded) and r["pool_slots"] == 8 and r["concurrency"] == 64
    assert r["v1_run_mixed"]["n"] == r["v1_run_mixed_cpu_capped"]["n"] == 20 and r["run_code"]["n"] == 10
    for key in ("v1_run_mixed", "v1_run_mixed_cpu_capped", "run_code"):
        assert set(r[key]) == set(recorded[key])
        _latencies_sane(r[key])


def test_trace_overhead_smoke_trains_both_modes_and_reads_the_observers_share() -> None:
    """bench/results/trace_overhead.json: step wall on/off and the store + monitor's share."""
    with records_nothing(RESULTS / "trace_overhead.json"):
        r = last_json(run_bench("bench/trace_overhead.py", "--smoke").stdout)
    recorded = json.loads((RESULTS / "trace_overhead.json").read_text())
    assert set(r) == set(recorded) and r["steps_per_run"] == 3 and r["pairs"] == 1
    walls = r["step_wall_s"]
    assert walls["off"]["n"] == walls["on"]["n"] == 2  # steps 2 and 3: the first is warm-up
    assert walls["ratio_on_off_median"] == pytest.approx(walls["on"]["median"] / walls["off"]["median"])
    d = r["direct"]
    assert 0 < d["observe_s_median"] <= d["observe_s_max"] and 0 < d["share_of_step_median"] < 1
    assert r["store_bytes_per_1000_trajectories"] > 0


def test_trace_store_smoke_writes_and_queries_a_store_through_rlvr_and_raw_duckdb() -> None:
    """bench/results/trace_store.json: size per 1000 trajectories, write_step, connect, each
    query through rlvr and raw DuckDB, the CLI."""
    with records_nothing(RESULTS / "trace_store.json"):
        r = last_json(run_bench("bench/trace_store.py", "--smoke").stdout)
    recorded = json.loads((RESULTS / "trace_store.json").read_text())
    assert set(r) == set(recorded)
    assert r["store"]["trajectories"] == 3 * 16 and r["store"]["bytes_per_1000_trajectories"] > 0
    assert set(r["queries"]) == set(recorded["queries"])
    for name, q in r["queries"].items():
        assert q["rows"] > 0, name
        for how in ("rlvr_query", "rlvr_connected", "duckdb_raw"):
            assert 0 < q[how]["min_s"] <= q[how]["median_s"] <= q[how]["max_s"], (name, how)
    assert r["cli_traces_csv"]["median_s"] > 0 and r["write"]["write_step"]["median_s"] > 0


@pytest.mark.skipif(
    shutil.which("redis-server") is None and not UNDER_CI, reason="redis-server not installed (make redis installs it)"
)
def test_trajectory_queue_smoke_measures_memory_and_redis_side_by_side() -> None:
    """docs/distributed.md: entries/s, p50 and p99 ms per backend (memory, Redis everysec
    and always; bench/results/trajectory_queue.json)."""
    with records_nothing(RESULTS / "trajectory_queue.json"):
        r = last_json(run_bench("bench/trajectory_queue.py", "--smoke").stdout)
    recorded = json.loads((RESULTS / "trajectory_queue.json").read_text())
    assert r["setting"]["producers"] == 2 and r["setting"]["seconds"] == 1.0
    assert [row["backend"] for row in r["rows"]] == [row["backend"] for row in recorded["rows"]]
    for row in r["rows"]:
        assert set(row) == set(recorded["rows"][0])
        assert row["entries_per_s"] > 0 and 0 < row["acked"] <= row["put"], row
        assert 0 < row["latency_ms"]["p50"] <= row["latency_ms"]["p99"] <= row["latency_ms"]["max"]


def test_openai_engine_smoke_runs_the_hf_side_and_reads_the_recorded_comparison(tmp_path: Path) -> None:
    """README / docs/engines.md: completions/s through llama-cpp-python's server against the
    HF engine's (0.60 against 5.85), 2.0/s without log-probs, identical greedy completions."""
    r = last_json(run_bench("bench/openai_engine.py", "--smoke").stdout)
    smoke = r.pop("smoke")["hf_engine"]
    assert smoke["completions"] == 2 and 0 < smoke["completion_tokens"] <= 2 * 8
    assert r["ratio_server_over_hf"] == pytest.approx(
        r["openai_engine"]["completions_per_s"] / r["hf_engine"]["completions_per_s"], abs=1e-3
    )
    assert 0 < r["identical_greedy_completions"] <= r["prompts"] == r["hf_engine"]["completions"]
    assert r["server_without_logprobs"]["completions_per_s"] > r["openai_engine"]["completions_per_s"]
    broken = json.loads((RESULTS / "openai_engine.json").read_text())
    broken["openai_engine"]["completion_tokens"] = 0
    (tmp_path / "r.json").write_text(json.dumps(broken))
    done = run_bench("bench/openai_engine.py", "--report", str(tmp_path / "r.json"), ok=False)
    assert done.returncode == 1 and "openai_engine generated nothing" in done.stderr


def test_vllm_comparison_parses_its_arguments_and_reads_what_its_measuring_code_writes(tmp_path: Path) -> None:
    """docs/engines.md: vLLM against HF per configuration (tokens/s, the ratio, target 10x at
    64x8) and one train step's split. No GPU nor vLLM here: the HF engine sits in vLLM's seat
    on the CPU, and --report reads what that wrote."""
    out = tmp_path / "vllm_vs_hf.json"
    with records_nothing(RESULTS / "vllm_vs_hf.json"):
        r = last_json(run_bench("bench/vllm_vs_hf.py", "--smoke", "--out", str(out)).stdout)
    (run,) = r["runs"]
    assert run["config"] == "2x4:8" and run["ratio"] == pytest.approx(
        run["vllm"]["tokens_per_s"] / run["hf"]["tokens_per_s"]
    )
    split = r["train_step"]
    assert split["completion_tokens"] == 2 * 4 * 8  # a random model never stops early
    assert split["step_s"] == pytest.approx(split["generate_s"] + split["learner_s"] + split["load_version_s"])
    assert split["generate_s"] > 0 and split["learner_s"] > 0
    assert last_json(run_bench("bench/vllm_vs_hf.py", "--report", str(out)).stdout) == r
    written = json.loads(out.read_text())
    written["runs"][0]["hf"]["completion_tokens"] = 0
    out.write_text(json.dumps(written))
    done = run_bench("bench/vllm_vs_hf.py", "--report", str(out), ok=False)
    assert done.returncode == 1 and "2x4:8 hf did not do the work" in done.stderr
    done = run_bench("bench/vllm_vs_hf.py", "--smoke", "--configs", "4x4", ok=False)
    assert done.returncode == 2 and "--configs / --step-config" in done.stderr


def test_mutation_yield_smoke_runs_mutants_in_the_sandbox_and_a_failing_reference_is_an_error(tmp_path: Path) -> None:
    """README's mutation figures (bench/results/mutation_yield.json): mutants, the share the
    gold tests kill beside the first test alone, per-operator rows, a run's wall."""
    with records_nothing(RESULTS / "mutation_yield.json"):
        r = last_json(run_bench("bench/mutation_yield.py", "--smoke").stdout)
    assert r["tasks"] == 12 and r["mutants"] > 12 and r["per_task"]["tasks_without"] == 0
    assert 0.5 < r["killed_share"] <= 1 and r["first_test_killed_share"] <= r["killed_share"]
    assert r["run_wall_ms_p50"] > 0 and r["timeouts"] >= 0
    task = json.loads((ROOT / "rlvr/tasks/data/python_functions.jsonl").read_text().splitlines()[0])
    task["reference"] = task["reference"].replace("+ 2", "+ 3")
    (tmp_path / "t.jsonl").write_text(json.dumps(task) + "\n")
    done = run_bench("bench/mutation_yield.py", "--tasks", str(tmp_path / "t.jsonl"), ok=False)
    assert done.returncode == 1 and "1 reference(s) fail their own tests: py/add_2" in done.stderr


def calc_project(tmp_path: Path) -> Path:
    """A two-function project with its tests: what the repository benches' smoke runs mine."""
    src = tmp_path / "calc"
    (src / "tests").mkdir(parents=True)
    (src / "pyproject.toml").write_text('[project]\nname = "calc"\nversion = "1.0"\n')
    (src / "calc.py").write_text(
        "def double(x):\n    return 2 * x\n\n\ndef inc(x):\n    if x > 0:\n        return x + 1\n    return x\n"
    )
    (src / "tests" / "test_calc.py").write_text(
        "from calc import double, inc\n\ndef test_double():\n    assert double(3) == 6\n\n"
        "def test_inc():\n    assert inc(1) == 2\n    assert inc(-1) == -1\n"
    )
    return src


def test_repo_mining_smoke_mines_a_fixture_repository_with_its_baseline_and_a_bad_source_is_one_line(
    tmp_path: Path,
) -> None:
    """README's repository figures (bench/results/repo_mining.json): the suite, mining
    yield, the oracle check and the whole-suite baseline, on a small fixture project."""
    src = calc_project(tmp_path)
    out = tmp_path / "out.json"
    args = ["--cache", str(tmp_path / "cache"), "--per-file", "4", "--unguided", "2", "--out", str(out)]
    r = last_json(run_bench("bench/repo_mining.py", "--repo", str(src), *args).stdout)["repos"][0]
    assert r["passing"] == 2 and 1 <= r["kept"] <= r["candidates"] <= 4
    assert r["oracle_passed"] == r["oracle_checked"] == r["kept"]
    assert r["unguided_mutants"] == 2 and r["unguided_cpu_s"] > 0
    full = json.loads(out.read_text())
    assert full["complete"] and full["repos"][0]["mining"]["verdict_s_p50"] > 0
    harder = full["repos"][0]["order2"]  # pairs of the kept tasks, each combined mutant checked like a single one
    # one module: at most --order2's default of 2 combined mutants, and at most one a pair of kept tasks
    assert 1 <= harder["candidates"] <= min(2, math.comb(r["kept"], 2)) and set(harder["per_operator"]) == {"order2"}
    assert harder["oracle_passed"] == harder["kept"] == r["order2_kept"]
    done = run_bench("bench/repo_mining.py", "--repo", str(tmp_path / "missing"), *args, ok=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "missing" in done.stderr


def test_repo_mining_results_cover_every_shipped_project_with_the_figures_the_docs_quote() -> None:
    """bench/results/repo_mining.json (--shipped): the nine projects of bundled:repos in
    order, complete, and the totals docs/repos.md and the README quote."""
    from rlvr.repos.bundle import PROJECTS

    saved = json.loads((ROOT / "bench/results/repo_mining.json").read_text())
    assert saved["complete"] and [r["source"] for r in saved["repos"]] == [p.source for p in PROJECTS]
    total = {k: sum(r["mining"][k] for r in saved["repos"]) for k in ("candidates", "kept", "cpu_s")}
    assert (total["kept"], total["candidates"]) == (164, 235) and round(
        total["kept"] / total["cpu_s"] * 3600, -1
    ) == 3950
    oracle = [sum(r["oracle"][k] for r in saved["repos"]) for k in ("passed", "checked")]
    harder = [sum(r["order2"][k] for r in saved["repos"]) for k in ("kept", "candidates", "oracle_passed")]
    assert oracle == [160, 164] and harder == [83, 84, 83]
    for r in saved["repos"]:  # every oracle failure is named with its reason, and only failures are
        assert len(r["oracle"]["failures"]) == r["oracle"]["checked"] - r["oracle"]["passed"]
        assert r["env"]["second_add_cached"] and r["env"]["cached_s"] < 0.05


def test_repo_agent_smoke_solves_a_fixture_repository_through_the_tools(tmp_path: Path) -> None:
    """README's agent figures (bench/results/repo_agent.json): the scripted policy's solve
    rate beside the submit-at-once baseline, tool and verdict seconds, on a fixture."""
    src = calc_project(tmp_path)
    out = tmp_path / "out.json"
    args = ["--cache", str(tmp_path / "cache"), "--per-file", "4", "--tasks", "3", "--out", str(out)]
    r = last_json(run_bench("bench/repo_agent.py", "--repo", str(src), *args).stdout)["repos"][0]
    assert 1 <= r["episodes"] <= 3 and r["solve_rate"] == 1.0 and r["noop_reward"] == 0.0
    assert r["run_tests_p50_s"] > 0 and r["submit_p50_s"] > 0 and r["host_read_s"] > 0
    full = json.loads(out.read_text())["repos"][0]
    assert full["scripted"]["located_traceback"] + full["scripted"]["located_search"] == r["episodes"]
    done = run_bench("bench/repo_agent.py", "--repo", str(tmp_path / "missing"), *args, ok=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "missing" in done.stderr


def test_repos_learning_smoke_evaluates_every_arm_on_held_out_tasks(
    tmp_path: Path, toolz_repo: tuple[Path, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """README's repository learning figure (bench/results/repos_learning.json): the base
    model, SFT on reference episodes, and RL after it, each evaluated on the same held-out
    tasks with their tool use read from the run's traces. Here toolz's shipped tasks,
    two of them relabelled held out, on the session's toolz build; nothing recorded."""
    cache, _ = toolz_repo
    monkeypatch.setenv("RLVR_REPOS_CACHE", str(cache))
    rows = [json.loads(line) for line in (ROOT / "rlvr/tasks/data/repos.jsonl").open()]
    toolz = [r for r in rows if r["tests"]["repo"] == "toolz-1.2.0"]
    held = [r for r in toolz if r["tests"]["tier"] == 0][:2]
    for r in held:
        r["metadata"]["split"] = "eval"
    source = tmp_path / "tasks.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in toolz))
    args = ["--smoke", "--source", str(source), "--train-tasks", "3", "--eval-tasks", "2", "--rl-steps", "1",
            "--work", str(tmp_path / "runs")]  # fmt: skip
    with records_nothing(RESULTS / "repos_learning.json"):
        r = last_json(run_bench("bench/repos_learning.py", *args).stdout)
    assert set(r) == {"base", "sft", "sft (reloaded)", "sft+rl"}
    assert all(a["episodes"] == 2 and 0.0 <= a["valid_call_share"] <= 1.0 and a["pass_at_1"] == 0.0 for a in r.values())
    picked = [json.loads(line) for line in (tmp_path / "runs" / "tasks.jsonl").open()]
    assert [p["id"] for p in picked[3:]] and {p["id"] for p in picked[3:]} == {h["id"] for h in held}
    again = ["--work", str(tmp_path / "again")]
    done = run_bench("bench/repos_learning.py", *args[:-2], "--eval-tasks", "3", *again, ok=False)
    assert done.returncode == 1 and "only 2 held-out tasks at tier 0; --eval-tasks 3" in done.stderr
    done = run_bench("bench/repos_learning.py", *args, ok=False)
    assert done.returncode == 1 and "not empty" in done.stderr


def test_repos_reference_plays_grounded_reference_episodes_the_environment_pays(
    tmp_path: Path, toolz_repo: tuple[Path, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """README's reference-episode figure (bench/results/repos_reference.json): toolz's
    shipped tasks' reference episodes played in the sandbox on the session's toolz build,
    each paid in full and naming no file before a message showed it; the baseline (the
    old episodes, which opened the broken file at once) is grounded only where the prompt
    named the file."""
    cache, _ = toolz_repo
    monkeypatch.setenv("RLVR_REPOS_CACHE", str(cache))
    rows = [json.loads(line) for line in (ROOT / "rlvr/tasks/data/repos.jsonl").open()]
    source = tmp_path / "tasks.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows if r["tests"]["repo"] == "toolz-1.2.0"))
    out = tmp_path / "ref.json"
    done = run_bench("bench/repos_reference.py", "--tasks", "4", "--source", str(source), "--out", str(out))
    r = json.loads(out.read_text())
    assert r["tasks"] == 4 and set(r["by_how"]) <= {"prompt", "tests", "search", "list"}
    total = {k: sum(c.get(k, 0) for c in r["by_how"].values()) for k in ("tasks", "paid", "grounded")}
    assert total == {"tasks": 4, "paid": 4, "grounded": 4}, r
    assert all(c.get("baseline_grounded", 0) <= c["tasks"] for c in r["by_how"].values())
    assert r["by_how"].get("prompt", {}).get("baseline_grounded", 0) == r["by_how"].get("prompt", {}).get("tasks", 0)
    assert "located by" in done.stdout and "all" in run_bench("bench/repos_reference.py", "--report", str(out)).stdout


def test_long_context_smoke_measures_memory_per_context_length(tmp_path: Path) -> None:
    """docs/repos.md's memory per context length (bench/results/long_context.json)."""
    out = tmp_path / "lc.json"
    r = last_json(run_bench("bench/long_context.py", "--lengths", "256", "512", "--new", "2", "--out", str(out)).stdout)
    assert r["model"] == "tiny-random" and [row[0] for row in r["rows"]] == [256, 512]
    full = json.loads(out.read_text())
    assert full["floor_mib"] > 0 and all(row["kv_cache_mib"] > 0 for row in full["rows"])
    done = run_bench("bench/long_context.py", "--lengths", "40000", "--out", str(out), ok=False)
    assert done.returncode == 2 and "past the model's 32768 positions" in done.stderr


def test_hack_blind_smoke_scores_one_reply_per_domain_against_its_wrong_reply(tmp_path: Path) -> None:
    """bench/hack_blind.py --smoke: the first blind entry of each domain scored as `rlvr
    score` scores it beside its honest wrong reply; the headline keys docs/hacking.md
    quotes; nothing written. A malformed set is one line naming the entry."""
    r = last_json(run_bench("bench/hack_blind.py", "--smoke").stdout)
    assert r["entries"] >= 8 and 0 <= r["pays"] <= r["entries"] and isinstance(r["paying_ids"], list)
    assert 0 <= r["paid_full"] <= r["entries"]
    recorded = json.loads((RESULTS / "hack_blind_before.json").read_text())
    assert recorded["entries"] == 70 and {"by_domain", "by_class", "rows"} <= set(recorded)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x/1", "domain": "math", "set": "bundled:math_word", "task_id": "t", "class": "c"}\n')
    done = run_bench("bench/hack_blind.py", "--set", str(bad), ok=False)
    assert done.returncode == 2 and "x/1 lacks reply, wrong, note" in done.stderr


def test_hidden_tests_bench_smoke_reports_coverage_honest_code_and_blind_hacks() -> None:
    """bench/hidden_tests.py --smoke: 12 tasks' drawn tests, 3 honest solutions and 3
    blind hacks run against them in the sandbox; the keys docs/hacking.md quotes."""
    r = last_json(run_bench("bench/hidden_tests.py", "--smoke").stdout)
    assert r["tasks"] == 12 and r["with_20"] >= 10 and r["honest_entries"] == 3 and r["honest_failing"] == 0
    assert r["reference_failing"] == 0 and 0 < r["reference_run_ms_max"] < 5000
    assert r["blind_entries"] == 3 and 0 <= r["blind_pays_on_drawn"] <= 3
    recorded = json.loads((RESULTS / "hidden_tests.json").read_text())
    assert {"coverage", "honest", "blind"} <= set(recorded) and recorded["coverage"]["tasks"] == 501


def test_judge_throughput_smoke_times_each_arm_and_reads_a_run_s_repeats(tmp_path: Path) -> None:
    """bench/judge_throughput.py --smoke: the plain client and the judge at each
    concurrency against the scripted judge server ask the same questions (equal scores),
    a second pass is all cache, and --run counts a run's replies already seen earlier in
    it (the cache hit rate a judge would get there); nothing recorded."""
    import pyarrow as pa

    from rlvr.trace.parquet import TRAJECTORY_SCHEMA, TraceStore

    store = TraceStore(str(tmp_path / "run" / "traces"))
    replies = [(1, "a", "x"), (1, "a", "y"), (1, "b", "x"), (2, "a", "x"), (2, "b", "z"), (3, "a", "y")]
    for step in (1, 2, 3):
        rows = [{"step": s, "task_id": t, "group_id": f"{s}-{t}", "sample": i, "completion": c}
                for i, (s, t, c) in enumerate(replies) if s == step]  # fmt: skip
        store._write("trajectories", step, pa.Table.from_pylist(rows, schema=TRAJECTORY_SCHEMA))
    with records_nothing(RESULTS / "judge_throughput.json"):
        done = run_bench("bench/judge_throughput.py", "--smoke", "--run", str(tmp_path / "run"))
    r = last_json(done.stdout)
    assert {"baseline/scores_per_s", "judge_c1/scores_per_s", "judge_c4/scores_per_s"} <= set(r)
    assert r["cached/hit_rate"] == 1.0 and "SCORES DIFFER" not in done.stdout
    assert "the judge said yes to 2 of 4 replies; 2 have a docstring" in done.stdout  # the scripted rule, applied
    assert r["run/hit_rate"] == pytest.approx(2 / 6)  # (a, x) at step 2 and (a, y) at step 3 were seen before


def test_judge_throughput_reads_its_recorded_results() -> None:
    """The recorded run on llama-cpp-python's server: each arm asked what the plain client
    asked, a cached pass is all hits, and the run's repeat share is a share."""
    done = run_bench("bench/judge_throughput.py", "--report", "bench/results/judge_throughput.json")
    r = last_json(done.stdout)
    assert r["judge_c1/scores_per_s"] > 0 and r["cached/hit_rate"] == 1.0 and 0.0 <= r["run/hit_rate"] <= 1.0
    assert "SCORES DIFFER" not in done.stdout and "llama-cpp-python" in done.stdout
