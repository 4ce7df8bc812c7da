"""A plugin adds a reward term, an engine, an advantage estimator and an environment
(tests/integration/plugins/example_plugin.py), and a 2-step `rlvr train` with
`plugins:` uses all four: no file of rlvr's changes for any of them."""

from __future__ import annotations

import json
from pathlib import Path

from rlvr.cli import main

QUICK = Path(__file__).parents[2] / "examples" / "quickstart.yaml"
PLUGIN = "tests.integration.plugins.example_plugin"


def test_a_plugin_adds_a_term_an_engine_an_estimator_and_an_environment(tmp_path: Path) -> None:
    tasks = tmp_path / "words.jsonl"
    with tasks.open("w") as f:
        for i in range(8):
            task = {
                "id": f"words/{i}",
                "domain": "word-count",
                "prompt": f"Say {i + 2} words.",
                "tests": {"words": i + 2},
            }
            f.write(json.dumps(task) + "\n")
    calls = tmp_path / "calls.json"
    argv = [
        "train", str(QUICK), f"plugins=[{PLUGIN}]", "model.name_or_path=tiny-random", f"tasks.source={tasks}",
        "tasks.eval_fraction=0.25", "eval.before_training=false", "eval.after_training=false", "eval.sources=[]",
        "algo.group_size=2", "train.prompts_per_step=2", "train.steps=2", "generation.max_new_tokens=8",
        "reward.canary_rate=0", "algo.advantage=mean_baseline", "engine.kind=counting_hf",
        f"engine.options={{calls_file: {calls}}}",
        "reward.terms=[{name: completion}, {name: brevity, weight: 0.5}, {name: words_off, weight: -0.01}]",
        f"output_dir={tmp_path}", "name=plugged", "--quiet",
    ]  # fmt: skip
    assert main(argv) == 0
    run = tmp_path / "plugged"
    assert json.loads(calls.read_text())["calls"] >= 2  # the plugin's engine generated every step
    trajs = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    assert len(trajs) == 2 * 2 * 2 and {t["domain"] for t in trajs} == {"word-count"}
    for t in trajs:
        comps = t["reward"]["components"]
        assert set(comps) >= {"completion", "brevity", "words_off"}  # the env's own and the plugin's term
        expected = comps["completion"] + 0.5 * comps["brevity"] - 0.01 * comps["words_off"]
        assert abs(t["reward"]["total"] - expected) < 1e-9
    # the plugin's estimator: each sample's reward minus its group's mean
    by_group: dict[str, list[dict]] = {}
    for t in trajs:
        by_group.setdefault(t["group_id"], []).append(t)
    for group in by_group.values():
        mean = sum(t["reward"]["total"] for t in group) / len(group)
        for t in group:
            assert abs(t["advantage"] - (t["reward"]["total"] - mean)) < 1e-5
    config = (run / "config.yaml").read_text()
    assert "advantage: mean_baseline" in config and "kind: counting_hf" in config
