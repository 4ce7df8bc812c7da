"""A plugin engine, `scripted_add`, for runs of the `rlvr` command that need samples the
reward pays (the tiny random model never finishes a reply): `ScriptedPolicy` answers
add_k tasks, half its samples right and half wrong, with the training model's own
log-probs. `plugins: [tests/integration/plugins/scripted_add.py]`, `engine.kind:
scripted_add`; the tasks are `helpers.write_add_tasks`'s."""

from __future__ import annotations

from typing import Any

from rlvr.config import RunConfig
from rlvr.rollout.engine import Engine
from rlvr.rollout.registry import register_engine
from tests.integration.helpers import ScriptedPolicy


@register_engine("scripted_add")
def scripted_add(
    cfg: RunConfig, model: Any, tokenizer: Any, *, own_weights: bool, version: int, for_training: bool
) -> Engine:
    engine: Engine = ScriptedPolicy(tokenizer, None).bind(model)  # type: ignore[assignment]
    return engine
