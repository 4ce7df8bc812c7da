"""The benches' smoke modes, so a renamed metric or a changed API fails here and not in the
next measurement (issue: benchmarks that cannot rot). Each runs as a user runs it, from
the checkout, with tiny sizes; what needs another environment (TRL) or a GPU is checked
through its reader over a recorded results file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.bench_smoke import ROOT, last_json, run_bench


def test_trl_comparison_smoke_trains_rlvr_and_reads_its_figures_from_the_run() -> None:
    figures = last_json(run_bench("bench/trl_vs_rlvr.py", "--smoke", "--generation-bf16").stdout)
    assert figures["rlvr_tokens_per_s"] > 0 and figures["rlvr_gen_bf16_tokens_per_s"] > 0
    assert 0 < figures["learner_share"] < 1 and figures["learner_fraction_of_peak"] >= 0  # tiny: may train no row


def test_trl_comparison_reads_its_recorded_results_and_quotes_the_ratio() -> None:
    figures = last_json(run_bench("bench/trl_vs_rlvr.py", "--report", "bench/results/trl_vs_rlvr.json").stdout)
    assert {"rlvr_tokens_per_s", "trl_tokens_per_s", "ratio"} <= set(figures)
    assert figures["ratio"] == pytest.approx(figures["rlvr_tokens_per_s"] / figures["trl_tokens_per_s"])


def test_a_side_whose_run_failed_is_an_error_not_a_figure(tmp_path: Path) -> None:
    results = json.loads((ROOT / "bench/results/trl_vs_rlvr.json").read_text())
    results["trl"]["tokens"] = 0
    (tmp_path / "r.json").write_text(json.dumps(results))
    done = run_bench("bench/trl_vs_rlvr.py", "--report", str(tmp_path / "r.json"), ok=False)
    assert done.returncode == 1 and "trl: no tokens or no time recorded" in done.stderr
    del results["rlvr"]["peak_rss_gib"]
    results["trl"]["tokens"] = 5
    (tmp_path / "r.json").write_text(json.dumps(results))
    done = run_bench("bench/trl_vs_rlvr.py", "--report", str(tmp_path / "r.json"), ok=False)
    assert "rlvr: the results lack peak_rss_gib" in done.stderr


def test_gpu_bench_smoke_runs_its_training_loop_on_the_cpu() -> None:
    r = last_json(run_bench("bench/gpu_train.py", "--smoke").stdout)
    assert r["device"] == "cpu" and r["completion_tokens"] > 0 and r["tokens_per_s"] > 0
    done = run_bench("bench/gpu_train.py", ok=False)
    assert done.returncode == 2 and "--smol-dir is required" in done.stderr


def test_sharded_gpu_bench_smoke_runs_torchrun_beside_one_process_on_the_cpu() -> None:
    """bench/gpu_sharded.py on the CPU (gloo, one rank): both runs train, the first step's
    reward is equal and its loss and grad norm agree (an entropy bonus gives the random
    model's rows a gradient), so a GPU run's figures are read by code the suite runs."""
    r = last_json(run_bench("bench/gpu_sharded.py", "--smoke").stdout)
    assert r["backend"] == "gloo" and r["nproc"] == 1 and r["agrees"] is True
    assert r["plain"]["grad_norm"][0] > 0 and r["first_step_grad_norm_rel_diff"] < 1e-3
    assert set(r["wall_s"]) == {"plain", "sharded"} and r["train_s_ratio_sharded_over_plain"] > 0
    done = run_bench("bench/gpu_sharded.py", ok=False)
    assert done.returncode == 2 and "--smol-dir is required" in done.stderr


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs Debian's bubblewrap")
def test_the_bwrap_baseline_runs_from_an_interpreter_under_tmp_and_a_failed_run_is_an_error(tmp_path: Path) -> None:
    from rlvr.sandbox.bench import SCRIPT, BaselineFailed, bwrap, bwrap_argv

    assert bwrap(check=True)  # this interpreter, wherever it lives
    argv = bwrap_argv(SCRIPT)
    assert argv[argv.index("--tmpfs") + 1] == "/tmp"
    with pytest.raises(BaselineFailed, match=r"a run failed \(exit 3\)"):
        bwrap("import sys; sys.exit(3)", check=True)


def test_generation_bench_smoke_reports_each_dtype_against_the_bandwidth_limit() -> None:
    r = last_json(run_bench("bench/generation.py", "--smoke", "--dtypes", "float32").stdout)
    assert r["read_gbs"] > 0 and r["batch"] == 4
    d = r["by_dtype"]["float32"]
    assert d["tokens"] == 32 and d["decode_steps"] == 8  # a random model never stops early: 4 rows x 8 tokens
    assert 0 < d["engine_fraction_of_limit"] == pytest.approx(d["engine_steps_per_s"] / d["limit_steps_per_s"])
    # the same-run baseline (the flash kernel) and the compute bound the README quotes beside it
    assert d["flash_engine_steps_per_s"] > 0 and d["matmul_gflops"] > 0
    assert d["engine_fraction_of_compute_limit"] == pytest.approx(
        d["engine_steps_per_s"] / d["compute_limit_steps_per_s"]
    )
    assert d["engine_fraction_of_float32_limit"] == pytest.approx(d["engine_fraction_of_limit"])


def test_cli_start_bench_smoke_runs_every_command_with_its_exit_status() -> None:
    r = last_json(run_bench("bench/cli_start.py", "--smoke").stdout)
    labels = [c["command"] for c in r["commands"]]
    assert "score a reply" in labels and sum(label.startswith("error:") for label in labels) >= 7


def test_rlvr_score_imports_no_model_stack_and_answers_quickly() -> None:
    """The CLI's promise (README): scoring a reply imports no model stack. Checked in the
    import log itself (torch alone costs seconds), and by the clock as a tripwire: the
    fastest of five starts within 2.5 s. The 1.0 s target is bench/cli_start.py's, measured
    on a quiet machine (0.85-1.0 s on a 2-core EPYC); in the suite, right after the Ray
    fault tests, a clean-clone run saw 1.05 s at best of five. On 2026-12-06 another
    2-core EPYC took 1.2-1.7 s for one start when quiet, the same at 69bb7a1 and 5c39e0e
    (alternated), and a clean-clone suite read 1.62 s at best: a model stack would cost
    seconds more, which is what the clock is here to catch."""
    import time

    best = float("inf")
    for i in range(5):
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, *(["-X", "importtime"] if i == 0 else []), "-m", "rlvr.cli", "score",
             "rlvr/tasks/data/python_functions.jsonl", "-", "--task-id", "py/add_2"],
            cwd=ROOT, input="def add_2(x):\n    return x + 2\n", capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        if i == 0:
            imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
            assert "rlvr.envs.scoring" in imported  # the log is what it seems
            heavy = sorted(m for m in imported if m.split(".")[0] in ("torch", "transformers", "vllm", "ray", "peft"))
            assert heavy == [], f"rlvr score imported {heavy[:5]}"
        else:
            best = min(best, time.perf_counter() - t0)
    assert best <= 2.5, f"rlvr score took {best:.2f} s at best"
