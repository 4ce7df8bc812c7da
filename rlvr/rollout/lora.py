"""LoRA through PEFT: train low-rank adapters instead of every weight.

`apply_lora(model, cfg)` injects adapters into the model *in place* (PEFT's LoRA layers
replace the targeted Linear modules) and freezes everything else, then returns the same
model object, so generation, log-probs and every algorithm work unchanged; only the
optimizer sees fewer parameters. `adapter_state(model)` / `load_adapter_state(model, s)`
save and restore exactly the adapter weights (checkpoints and resume);
`merged_copy(model)` gives a plain model with the adapters folded in (what a checkpoint's
`model/` directory holds, so `rlvr eval --checkpoint` and any HF tool can load it).
"""

from __future__ import annotations

import copy
from typing import Any

import torch
from peft import LoraConfig, get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict
from transformers import PreTrainedModel

_WRAPPER = "_rlvr_peft_wrapper"


def apply_lora(
    model: PreTrainedModel, r: int, alpha: int, dropout: float, target_modules: list[str]
) -> PreTrainedModel:
    cfg = LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=target_modules, bias="none")
    wrapper = get_peft_model(model, cfg)
    base: PreTrainedModel = wrapper.get_base_model()  # type: ignore[assignment]  # peft types it as Module
    object.__setattr__(base, _WRAPPER, wrapper)  # not a submodule: keeps state_dict and repr clean
    return base


def is_lora(model: PreTrainedModel) -> bool:
    return hasattr(model, _WRAPPER)


def adapter_state(model: PreTrainedModel) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in get_peft_model_state_dict(getattr(model, _WRAPPER)).items()}


def load_adapter_state(model: PreTrainedModel, state: dict[str, Any]) -> None:
    result = set_peft_model_state_dict(getattr(model, _WRAPPER), state)
    unexpected = getattr(result, "unexpected_keys", [])
    if unexpected:
        raise ValueError(f"adapter checkpoint does not fit this model: unexpected keys {unexpected[:5]}")


def merged_copy(model: PreTrainedModel) -> PreTrainedModel:
    """A copy of the model with the adapters merged into the weights and removed."""
    wrapper = copy.deepcopy(getattr(model, _WRAPPER))
    merged: PreTrainedModel = wrapper.merge_and_unload()
    return merged


def trainable_fraction(model: PreTrainedModel) -> float:
    total = sum(p.numel() for p in model.parameters())
    return sum(p.numel() for p in model.parameters() if p.requires_grad) / max(total, 1)
