"""The smoke modes of the benches that train or score runs (curriculum, hacking in
training, the Ray runner, the A/B of two commits, and their shared quickstart runner), so
a renamed metric or a changed API fails here and not in the next measurement (issue:
benchmarks that cannot rot). Each runs as a user runs it, from the checkout, on the tiny
random model; each checks the keys its results file has and the README quotes, and that
a smoke run records nothing in bench/results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.bench_smoke import RESULTS, ROOT, last_json, records_nothing, run_bench


def _share(x: object) -> bool:
    return isinstance(x, float | int) and 0.0 <= x <= 1.0


def test_the_quickstart_runner_reads_its_run_through_figures_and_a_failed_run_is_one_line() -> None:
    r = last_json(run_bench("bench/train_runs.py", "--smoke").stdout)
    assert r["steps_timed"] == 1 and len(r["reward"]) == 1 and len(r["step_s"]) == 1
    assert 0 < r["tokens"] <= 2 * 4 * 8  # 2 prompts x 4 replies x at most 8 new tokens
    assert r["tokens_per_s"] > 0 and r["wall_s"] > 0 and r["generate_s"] > 0
    done = run_bench("bench/train_runs.py", "--smoke", "train.stepz=1", ok=False)
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .startswith("smoke: the training run failed (exit 2): rlvr: error: unknown config key 'train.stepz'")
    )


def test_quickstart_bench_smoke_times_a_run_and_reads_pass_at_1_before_and_after() -> None:
    with records_nothing(RESULTS / "quickstart.json", RESULTS / "quickstart_avx2.json"):
        r = last_json(run_bench("bench/quickstart.py", "--smoke").stdout)
    (run,) = r["runs"]
    assert run["seed"] == 0 and run["wall_s"] > 0 and r["cores"] == os.cpu_count()
    assert _share(run["pass_before"]) and _share(run["pass_after"])
    assert run["gain"] == run["pass_after"] - run["pass_before"]
    assert (
        run["steps_s"] == run["rollout_s"] + run["train_s"]
        or abs(run["steps_s"] - run["rollout_s"] - run["train_s"]) < 1e-6
    )
    assert run["meets_target"] == (run["wall_s"] <= 300 and run["gain"] >= 0.05)


def test_quickstart_bench_ab_runs_each_seed_as_shipped_then_with_the_overrides() -> None:
    with records_nothing(RESULTS / "quickstart_ab.json"):
        r = last_json(run_bench("bench/quickstart.py", "--smoke", "--baseline-with", "reward.hidden_tests=5").stdout)
    assert r["overrides"] == ["reward.hidden_tests=5"]
    assert [(x["seed"], x["variant"]) for x in r["runs"]] == [(0, "shipped"), (0, "with")]


def test_curriculum_bench_calibrates_then_trains_both_arms_on_the_file() -> None:
    with records_nothing(RESULTS / "curriculum_python.json"):
        r = last_json(run_bench("bench/curriculum.py", "--smoke", "--mix", "python", "--calibrate", "1").stdout)
    assert set(r["runs"]) == {"learnability/0", "calibrated/0"} and set(r["summary"]) == {"learnability", "calibrated"}
    cal = r["calibration"]
    assert cal["samples"] == 1 and cal["measured"] == cal["asked"] > 0 and cal["written"] == 308
    assert cal["levels_before"] == {"1": cal["asked"]}  # the smoke measures the easiest level only
    assert cal["elapsed_s"] > 0 and len(r["calibrated"]) == 64  # the file's sha256, recorded with the runs


def test_curriculum_bench_smoke_reports_what_the_readme_quotes_per_sampler() -> None:
    with records_nothing(RESULTS / "curriculum.json", RESULTS / "curriculum_code.json"):
        r = last_json(run_bench("bench/curriculum.py", "--smoke").stdout)
    assert r["steps"] == 2 and set(r["runs"]) == {"uniform/0", "bandit/0"}
    for run in r["runs"].values():
        assert [s for s, _ in run["pass_at_1"]] == [0, 1, 2]  # before training, then every step
        assert all(_share(p) for _, p in run["pass_at_1"])
    for run in r["runs"].values():  # what the sampler drew, against the run's own task set
        assert run["domains"] == 3 and set(run["zero_draw_domains"]) <= {"python", "math", "json"}
        assert sum(run["draws_by_domain"].values()) > 0 and 0 < run["family_diversity"] <= 1
        assert set(run["solved"]) and all(isinstance(v, bool) for v in run["solved"].values())
        assert set(run["by_domain"]) == {"start", "end"}
    assert set(r["summary"]) == {"uniform", "bandit"}
    for name, row in r["summary"].items():
        paired = {"paired_vs_uniform"} if name != "uniform" else set()
        assert set(row) == {"seeds", "informative", "informative_first_quarter", "zero_advantage_gen_s", "gen_s",
                            "pass_at_1_start", "pass_at_1_final", "step_reaching_uniform_final", "family_diversity",
                            "zero_draw_domains"} | paired  # fmt: skip
        assert _share(row["informative_first_quarter"])
        assert row["seeds"] == [0] and _share(row["informative"])
        assert row["gen_s"] > 0 and 0 <= row["zero_advantage_gen_s"] <= row["gen_s"] + 1e-9
        assert _share(row["pass_at_1_start"]) and _share(row["pass_at_1_final"])
        assert len(row["step_reaching_uniform_final"]) == 1
    assert r["summary"]["uniform"]["step_reaching_uniform_final"][0] in (1, 2)  # uniform reaches its own final
    paired = r["summary"]["bandit"]["paired_vs_uniform"]  # the same 4 held-out tasks, both at 0 with the tiny model
    assert paired["wins"] + paired["losses"] <= 4 and 0 < paired["p"] <= 1


def test_hack_training_smoke_learns_to_hack_under_a_naive_reward_and_not_under_rlvrs() -> None:
    with records_nothing(RESULTS / "hack_training.json"):
        r = last_json(run_bench("bench/hack_training.py", "--smoke").stdout)
    assert set(r["curves"]) == {"naive", "rlvr"}
    for curves in r["curves"].values():
        assert len(curves) == 1 and [p["step"] for p in curves[0]] == [1, 2, 3]
        for p in curves[0]:
            assert set(p) == {"step", "p_hack", "hack_rate", "held_out_pass", "reward", "hacks_flagged",
                              "canary_caught"}  # fmt: skip
            assert _share(p["hack_rate"]) and _share(p["held_out_pass"]) and _share(p["p_hack"])
        assert sum(p["hack_rate"] for p in curves[0]) > 0  # hacks were drawn and scored
        assert all(p["hacks_flagged"] == 1.0 for p in curves[0] if p["hacks_flagged"] is not None)
    # the README's figure in small: the naive reward pays the hack, rlvr's defaults do not
    naive, rlvr = r["curves"]["naive"][0], r["curves"]["rlvr"][0]
    assert naive[-1]["p_hack"] > 0.5 > rlvr[-1]["p_hack"]
    assert sum(p["reward"] for p in naive) > sum(p["reward"] for p in rlvr)


def test_hack_training_special_cases_pay_under_a_naive_reward_and_nothing_under_rlvrs() -> None:
    with records_nothing(RESULTS / "hack_training_special.json"):
        r = last_json(run_bench("bench/hack_training.py", "--smoke", "--hack", "special").stdout)
    assert r["args"]["hack"] == "special" and r["configs"]["rlvr"]["hidden_tests"] == 20
    naive, rlvr = r["curves"]["naive"][0], r["curves"]["rlvr"][0]
    assert sum(p["hack_rate"] for p in naive) > 0 and sum(p["hack_rate"] for p in rlvr) > 0
    assert naive[-1]["p_hack"] > 0.5  # visible tests alone pay the special cases
    assert rlvr[-1]["p_hack"] <= 0.5  # drawn tests pay them nothing, the overfit rule takes some away


def test_hack_training_model_smoke_reads_each_runs_series_from_its_trace_store() -> None:
    with records_nothing(RESULTS / "hack_training_model.json"):
        r = last_json(run_bench("bench/hack_training_model.py", "--smoke").stdout)
    keys = ("hack_rate", "strong_rate", "held_out_pass", "visible_pass", "reward")
    assert r["steps"] == 2 and r["seeds"] == [0] and set(r["runs"]) == {"naive/0", "rlvr/0"}
    for run in r["runs"].values():
        assert run["step"] == [1.0, 2.0] and all(0 < n <= 8 for n in run["n"])  # 2 prompts x 4, canaries left out
        assert all(len(run[k]) == 2 and all(_share(x) for x in run[k]) for k in keys)
    for row in r["summary"].values():
        assert set(row) == set(keys) and all(len(row[k]) == 2 and all(map(_share, row[k])) for k in keys)


@pytest.mark.skipif(
    shutil.which("redis-server") is None and os.environ.get("CI") != "true",
    reason="redis-server is not installed (make redis)",
)
def test_ray_runner_smoke_runs_the_sync_pair_and_reads_the_gain() -> None:
    with records_nothing(RESULTS / "ray_runner.json", RESULTS / "ray_runner_sync.json"):
        r = last_json(run_bench("bench/ray_runner.py", "--smoke").stdout)
    rows = r["throughput"]
    assert [x["name"] for x in rows] == ["inproc-sync", "ray1-sync"]
    for x in rows:
        assert x["steps"] == 2 and x["steps_per_s"] > 0 and x["step_s_median"] > 0 and x["wall_s"] > 0
        assert _share(x["reward_mean"])
    assert r["ratio_sync_ray1_over_inproc"] == pytest.approx(rows[1]["steps_per_s"] / rows[0]["steps_per_s"], abs=2e-3)
    g = r["gain"]
    assert all(_share(g[k]) for k in ("pass_at_1_before", "pass_at_1_after"))
    assert all(_share(g[k]) for k in ("reward_first_quarter", "reward_last_quarter"))


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout")
def test_ab_commits_smoke_runs_head_against_itself_in_worktrees_with_equal_weights() -> None:
    def worktrees() -> str:
        return subprocess.run(["git", "worktree", "list"], cwd=ROOT, capture_output=True, text=True).stdout

    listed = worktrees()
    with records_nothing(RESULTS / "ab_commits.json", RESULTS / "ab_commits_cli.json"):
        r = last_json(run_bench("bench/ab_commits.py", "--smoke", "--base", "HEAD", "--head", "HEAD").stdout)
    assert worktrees() == listed  # both removed
    assert r["steps"] == 1 and r["rounds"] == 1
    for side in ("base", "head"):
        assert len(r["runs"][side]) == 1 and len(r["cli_runs"][side]) == 1
        assert all(r["median"][side][k] > 0 for k in ("generate_s", "train_s", "wall_s"))
        assert set(r["cli_median_s"][side]) == {"--help", "config", "score"}
        assert all(s > 0 for s in r["cli_median_s"][side].values())
    assert r["weights_equal"] is True  # the same commit, the same seed: bit for bit
    done = run_bench("bench/ab_commits.py", ok=False)
    assert done.returncode == 2 and "--base is required" in done.stderr


def test_sft_vs_trl_smoke_trains_rlvr_s_side_on_the_bench_s_batches() -> None:
    with records_nothing(RESULTS / "sft_vs_trl.json"):
        figures = last_json(run_bench("bench/sft_vs_trl.py", "--smoke").stdout)
    assert figures["rlvr_tokens_per_s"] > 0 and figures["rlvr_peak_rss_gib"] > 0


def test_rm_vs_trl_smoke_trains_rlvr_s_side_on_the_rule_s_pairs() -> None:
    with records_nothing(RESULTS / "rm_vs_trl.json"):
        figures = last_json(run_bench("bench/rm_vs_trl.py", "--smoke").stdout)
    assert figures["rlvr_tokens_per_s"] > 0 and 0.0 <= figures["rlvr_held_out_accuracy"] <= 1.0
    assert 0.0 <= figures["length_baseline_accuracy"] <= 1.0


def test_feedback_demo_smoke_trains_a_reward_model_and_runs_each_arm(tmp_path: Path) -> None:
    """With --warm-start: one rlvr sft on the documented references first, every arm from
    its model; --keep-rm and --keep-warm keep the reward model and the warm start for a
    later --reuse-rm and --reuse-warm, which train neither again."""
    warm = tmp_path / "warm"
    with records_nothing(RESULTS / "feedback_demo_warm.json"):
        done = run_bench("bench/feedback_demo.py", "--smoke", "--warm-start", "0.5", "--keep-rm", str(tmp_path),
                         "--keep-warm", str(warm))  # fmt: skip
        figures = last_json(done.stdout)
        again = run_bench("bench/feedback_demo.py", "--smoke", "--reuse-warm", str(warm), "--reuse-rm", str(tmp_path),
                          "--arms", "learned")  # fmt: skip
    reused = last_json(again.stdout)
    assert reused["learned/from_warm_start"] and "verifiable/pass_after" not in reused
    assert reused["warm_start/documented"] == figures["warm_start/documented"]
    assert (warm / "warm" / "model" / "config.json").is_file()
    kept = json.loads((tmp_path / "rm_figures.json").read_text())["reward_model"]
    assert (tmp_path / "rm" / "reward_model" / "rlvr_reward_model.json").is_file() and kept["records"] > 200
    for arm in ("verifiable", "learned", "judge"):
        assert 0.0 <= figures[f"{arm}/pass_after"] <= 1.0 and figures[f"{arm}/cpu_s"] > 0
    assert figures["warm_start/steps"] == 1 and 0 < figures["warm_start/documented"] < figures["warm_start/examples"]
    assert all(figures[f"{arm}/from_warm_start"] for arm in ("verifiable", "learned", "judge"))


def test_rm_rerank_smoke_imports_a_run_trains_and_reranks() -> None:
    with records_nothing(RESULTS / "rm_rerank.json"):
        figures = last_json(run_bench("bench/rm_rerank.py", "--smoke").stdout)
    assert figures["tasks"] == 3 and figures["random"] <= figures["oracle"]
    for picker in ("longest", "shortest", "reward_model"):
        assert 0.0 <= figures[picker] <= figures["oracle"]
    assert isinstance(figures["rm_audit_passed"], bool)  # the reward model was audited (rlvr rm check)


def test_rm_rerank_reads_its_recorded_results() -> None:
    """The figures docs/feedback.md quotes, from the recorded run: no picker above the
    oracle, and the reward model's audit beside them."""
    figures = last_json(run_bench("bench/rm_rerank.py", "--report", "bench/results/rm_rerank.json").stdout)
    assert figures["tasks"] == 60
    for picker in ("random", "longest", "shortest", "reward_model"):
        assert 0.0 <= figures[picker] <= figures["oracle"]
    assert isinstance(figures["rm_audit_passed"], bool)


def test_warm_start_smoke_runs_each_arm_as_a_user_runs_it() -> None:
    with records_nothing(RESULTS / "warm_start.json"):
        figures = last_json(run_bench("bench/warm_start.py", "--smoke", "--domains", "json").stdout)
    for arm in ("rl", "sft", "rft", "sft_rl"):
        assert 0.0 <= figures[f"json/{arm}/pass_after"] <= 1.0 and figures[f"json/{arm}/cpu_s"] > 0


def test_sft_vs_trl_reads_its_recorded_results_and_quotes_the_agreement() -> None:
    figures = last_json(run_bench("bench/sft_vs_trl.py", "--report", "bench/results/sft_vs_trl.json").stdout)
    assert figures["ratio"] == pytest.approx(figures["rlvr_tokens_per_s"] / figures["trl_tokens_per_s"])
    assert figures["first_loss_ok"] and figures["curves_ok"]  # the recorded run met the bounds


def test_rm_vs_trl_reads_its_recorded_results() -> None:
    figures = last_json(run_bench("bench/rm_vs_trl.py", "--report", "bench/results/rm_vs_trl.json").stdout)
    assert figures["ratio"] == pytest.approx(figures["rlvr_tokens_per_s"] / figures["trl_tokens_per_s"])
    assert figures["first_loss_ok"]  # the same batch on the same weights: the same loss
    assert figures["rlvr_held_out_accuracy"] > figures["length_baseline_accuracy"]  # beats length, as the issue asks


def test_feedback_demo_reads_its_recorded_results() -> None:
    figures = last_json(run_bench("bench/feedback_demo.py", "--report", "bench/results/feedback_demo.json").stdout)
    for arm in ("verifiable", "learned", "learned_open", "judge"):
        assert 0.0 <= figures[f"{arm}/pass_after"] <= 1.0 and 0.0 <= figures[f"{arm}/doc_after"] <= 1.0


def test_feedback_demo_reads_the_run_with_a_reward_model_of_both_sources() -> None:
    """bench/results/feedback_demo_combined.json: the rule's pairs and a run's own groups
    behind one reward model, the ungated term against verifiable only."""
    done = run_bench("bench/feedback_demo.py", "--report", "bench/results/feedback_demo_combined.json")
    figures = last_json(done.stdout)
    for arm in ("verifiable", "learned_open"):
        assert 0.0 <= figures[f"{arm}/pass_after"] <= 1.0 and 0.0 <= figures[f"{arm}/doc_after"] <= 1.0
    assert "reward model data: the rule's" in done.stdout


def test_feedback_demo_refuses_a_reused_reward_model_with_flags_it_would_ignore() -> None:
    done = run_bench("bench/feedback_demo.py", "--reuse-rm", "kept", "--feedback", "more.jsonl", ok=False)
    assert "--reuse-rm takes a kept reward model" in done.stderr
    done = run_bench("bench/feedback_demo.py", "--reuse-warm", "kept", "--warm-start", "0.5", ok=False)
    assert "--reuse-warm takes a kept warm start and its share" in done.stderr
    done = run_bench("bench/feedback_demo.py", "--keep-warm", "kept", ok=False)
    assert "--keep-warm keeps the warm start: give --warm-start" in done.stderr
    done = run_bench("bench/feedback_demo.py", "--work", "bench", ok=False)
    assert "bench: not empty" in done.stderr
    done = run_bench("bench/feedback_demo.py", "--reuse-warm", "bench", ok=False)
    assert "--reuse-warm bench: no warm_figures.json there" in done.stderr


def test_feedback_demo_reads_the_warm_started_runs() -> None:
    """bench/results/feedback_demo_warm*.json: the arms after one rlvr sft on the references
    (all of them documented, then half), each stopped by hand after seed 0 and saying so."""
    for name, documented in (("feedback_demo_warm_full.json", 248), ("feedback_demo_warm.json", 130)):
        saved = json.loads((RESULTS / name).read_text())
        assert saved["complete"] is False and "stopped by hand" in saved["note"]
        done = run_bench("bench/feedback_demo.py", "--report", f"bench/results/{name}")
        figures = last_json(done.stdout)
        assert figures["warm_start/documented"] == documented and f"({documented} documented)" in done.stdout
        assert 0.0 <= figures["verifiable/doc_after"] <= 1.0


def test_feedback_demo_reads_the_three_seed_run_after_a_55_percent_warm_start() -> None:
    """bench/results/feedback_demo_warm55.json, the README's demonstration table: 143 of
    248 references documented, both arms on seeds 0-2 from that one warm start."""
    saved = json.loads((RESULTS / "feedback_demo_warm55.json").read_text())
    assert saved["complete"] is True and "rebuilt from the bench's own printed lines" in saved["note"]
    assert sorted((r["arm"], r["seed"]) for r in saved["rows"]) == [
        (a, s) for a in ("learned", "verifiable") for s in (0, 1, 2)
    ]
    figures = last_json(
        run_bench("bench/feedback_demo.py", "--report", "bench/results/feedback_demo_warm55.json").stdout
    )
    assert figures["warm_start/documented"] == 143 and figures == saved["figures"]
    assert figures["learned/from_warm_start"] and figures["verifiable/from_warm_start"]


def test_feedback_demo_reads_the_judge_arm_from_the_same_warm_start() -> None:
    """bench/results/feedback_demo_warm55_judge.json, the demonstration table's judge rows:
    seeds 0-2 from the 55% warm start, the term gated all_tests_pass."""
    saved = json.loads((RESULTS / "feedback_demo_warm55_judge.json").read_text())
    assert saved["complete"] is True and sorted((r["arm"], r["seed"]) for r in saved["rows"]) == [
        ("judge", s) for s in (0, 1, 2)
    ]
    figures = last_json(
        run_bench("bench/feedback_demo.py", "--report", "bench/results/feedback_demo_warm55_judge.json").stdout
    )
    assert figures["warm_start/documented"] == 143 and figures == saved["figures"] and figures["judge/from_warm_start"]
    assert all(r["doc_before"] == 0.0 and r["doc_after"] == 1.0 for r in saved["rows"])


def test_feedback_demo_reads_the_128_token_run_and_its_changes_agree_with_it() -> None:
    """bench/results/feedback_demo_warm55_128.json (both arms, seeds 0-2, the same warm
    start with a 128-token budget) and its eval_changes file: every run's solved count is
    its pass@1, and the learned arm's losses are the ones the docs name (swap_case)."""
    saved = json.loads((RESULTS / "feedback_demo_warm55_128.json").read_text())
    assert saved["complete"] is True and saved["max_new_tokens"] == 128 and saved["gate"] == "all_tests_pass"
    assert sorted((r["arm"], r["seed"]) for r in saved["rows"]) == [
        (a, s) for a in ("learned", "verifiable") for s in (0, 1, 2)
    ]
    figures = last_json(
        run_bench("bench/feedback_demo.py", "--report", "bench/results/feedback_demo_warm55_128.json").stdout
    )
    assert figures == saved["figures"] and figures["warm_start/documented"] == 143
    changes = {
        Path(c["run"]).name: c for c in json.loads((RESULTS / "feedback_demo_warm55_128_changes.json").read_text())
    }
    for r in saved["rows"]:
        c = changes[f"{r['arm']}-{r['seed']}"]
        assert c["solved_after"] == round(r["pass_after"] * c["tasks"]) and c["length_cut_after"] == 0
        assert c["solved_before"] == round(r["pass_before"] * c["tasks"]) == 54
    lost = {k: sorted(c["lost"]) for k, c in changes.items() if k.startswith("learned")}
    assert lost == {"learned-0": ["py/swap_case"], "learned-1": [], "learned-2": ["py/swap_case"]}
    assert not any(c["won"] for k, c in changes.items() if k.startswith("learned"))
    assert sorted(changes["verifiable-1"]["lost"]) == ["py/floor_div_2", "py/is_multiple_of_11"]
    assert sorted(changes["verifiable-1"]["won"]) == ["py/last_3_chars"]


def test_feedback_demo_reads_the_tie_break_gate_run() -> None:
    """bench/results/feedback_demo_warm55_128_tie.json: the learned arm gated tie_break,
    seeds 0-2, 128 tokens; each seed lost swap_case and nothing else, as the docs say."""
    saved = json.loads((RESULTS / "feedback_demo_warm55_128_tie.json").read_text())
    assert saved["complete"] and (saved["gate"], saved["max_new_tokens"], saved["weight"]) == ("tie_break", 128, 0.5)
    figures = last_json(
        run_bench("bench/feedback_demo.py", "--report", "bench/results/feedback_demo_warm55_128_tie.json").stdout
    )
    assert figures == saved["figures"] and figures["learned/from_warm_start"]
    assert [(r["seed"], r["pass_after"], r["doc_after"]) for r in saved["rows"]] == [
        (s, 53 / 60, 1.0) for s in (0, 1, 2)
    ]
    changes = json.loads((RESULTS / "feedback_demo_warm55_128_tie_changes.json").read_text())
    assert [(sorted(c["lost"]), sorted(c["won"])) for c in changes] == [(["py/swap_case"], [])] * 3


def test_eval_changes_reads_a_runs_evaluations_before_and_after(tmp_path: Path) -> None:
    """bench/eval_changes.py on a tiny run with both evaluations: the counts it reports are
    the run's own (summary.json), and a directory without traces is one line, exit 2."""
    done = subprocess.run(
        [str(ROOT / ".venv/bin/rlvr"), "train", "examples/quickstart.yaml", "--plain", "model.name_or_path=tiny-random",
         "generation.max_new_tokens=8", "train.steps=1", "eval.num_tasks=4", "eval.before_training=true",
         "eval.after_training=true", f"output_dir={tmp_path}", "name=r"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    out = tmp_path / "changes.json"
    printed = run_bench("bench/eval_changes.py", str(tmp_path / "r"), "--out", str(out)).stdout
    (c,) = json.loads(out.read_text())
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert c["tasks"] == 4 and c["solved_after"] == round(summary["eval_after"]["pass_at_1"] * 4)
    assert c["solved_before"] == round(summary["eval_before"]["pass_at_1"] * 4)
    assert len(c["lost"]) - len(c["won"]) == c["solved_before"] - c["solved_after"] and "solved" in printed
    bad = run_bench("bench/eval_changes.py", str(tmp_path), ok=False)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "no trace store" in bad.stderr


def test_warm_start_reads_its_recorded_results() -> None:
    figures = last_json(run_bench("bench/warm_start.py", "--report", "bench/results/warm_start.json").stdout)
    for domain in ("json", "trading"):
        for arm in ("rl", "sft", "rft", "sft_rl"):
            assert 0.0 <= figures[f"{domain}/{arm}/pass_after"] <= 1.0 and figures[f"{domain}/{arm}/cpu_s"] > 0


def test_test_writing_smoke_prices_the_reward_scores_the_corpus_and_trains() -> None:
    with records_nothing(RESULTS / "test_writing.json"):
        r = last_json(run_bench("bench/test_writing.py", "--smoke").stdout)
    assert r["cost"]["same_rewards"] and r["cost"]["scripts_per_reply"] > 0
    corpus = r["corpus"]
    assert corpus["gold tests"]["mean_reward"] >= 1.0  # the gold tests catch every kept mutant
    assert corpus["assert True"]["mean_reward"] == 0.0 and corpus["a call, no assert"]["mean_reward"] == 0.0
    assert corpus["fails on the function"]["mean_reward"] == -0.5
    for label, flag in [("introspection", "test_introspection"), ("unseeded random", "unseeded_random"),
                        ("clock", "timing_assertion")]:  # fmt: skip
        assert corpus[label]["flags"].get(flag) == r["cost"]["tasks"] and corpus[label]["mean_reward"] <= 0.0
    assert {"before", "after"} <= set(r["train"][0])


def test_test_writing_sources_smoke_evaluates_the_bug_revealing_set() -> None:
    with records_nothing(RESULTS / "test_writing.json"):
        r = last_json(run_bench("bench/test_writing.py", "--smoke", "--parts", "sources").stdout)
    got = r["sources"]["bug_revealing/base"]
    assert got["num_tasks"] == 3 and 0.0 <= got["pass_at_1"] <= 1.0 and -1.0 <= got["mean_reward"] <= 1.1


def test_codet_smoke_samples_solutions_and_tests_and_picks() -> None:
    with records_nothing(RESULTS / "codet.json"):
        r = last_json(run_bench("bench/codet.py", "--smoke").stdout)
    assert r["tasks"] == 3 and r["samples"] == 2
    assert 0.0 <= r["random"] <= r["oracle"] <= 1.0 and 0.0 <= r["codet"] <= r["oracle"]
    assert 0.0 <= r["tests_said_something"] <= 1.0
