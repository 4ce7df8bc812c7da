"""Any local Hugging Face causal LM directory is a policy: other architectures than the
embedded Llama train and evaluate, and prompts are rendered with the directory's own
chat template."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM, Qwen2Config, Qwen2ForCausalLM

from rlvr.config import load_config
from rlvr.rollout.models import TINY, load_tokenizer
from rlvr.train.loop import train

QUICK = Path(__file__).parents[2] / "examples" / "quickstart.yaml"
# a template no bundled model uses, so the test sees which one rendered the prompt
TEMPLATE = (
    "{% for m in messages %}[[{{ m['role'] | upper }}]] {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}[[ASSISTANT]] {% endif %}"
)


def _write(path: Path, arch: str) -> Path:
    tok = load_tokenizer(TINY)
    common = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, max_position_embeddings=1024, eos_token_id=tok.eos_token_id,
                  pad_token_id=tok.pad_token_id)  # fmt: skip
    torch.manual_seed(0)
    if arch == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(num_key_value_heads=2, tie_word_embeddings=True, **common))
    else:
        model = GPTNeoXForCausalLM(GPTNeoXConfig(**common))
    model.save_pretrained(str(path))
    tok.chat_template = TEMPLATE
    tok.save_pretrained(str(path))
    return path


@pytest.mark.parametrize("arch", ["qwen2", "gpt_neox"])
def test_a_local_model_directory_trains_with_its_own_chat_template(tmp_path: Path, arch: str) -> None:
    model_dir = _write(tmp_path / arch, arch)
    overrides = [
        f"model.name_or_path={model_dir}",
        "generation.max_new_tokens=6",
        "algo.group_size=2",
        "train.prompts_per_step=2",
        "train.steps=2",
        "eval.num_tasks=2",
        f"output_dir={tmp_path}",
        "name=run",
    ]
    summary = train(load_config(QUICK, overrides), quiet=True)
    assert summary.eval_after is not None and summary.eval_after.num_tasks == 2
    rec = json.loads((tmp_path / "run" / "trajectories.jsonl").read_text().splitlines()[0])
    prompt = load_tokenizer(str(model_dir)).decode(rec["prompt_ids"])
    assert prompt.startswith("[[SYSTEM]] You are an expert Python programmer.")
    assert "[[USER]] Write a Python function" in prompt and "[[ASSISTANT]] ```python\n" in prompt
    ckpt = tmp_path / "run" / "checkpoints" / "step-000002" / "model" / "config.json"
    assert json.loads(ckpt.read_text())["model_type"] == arch  # the checkpoint is that architecture, loadable
