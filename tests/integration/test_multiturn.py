"""Multi-turn episodes with a scripted policy: the second attempt fixes the first."""

from __future__ import annotations

from rlvr.envs import EnvSettings
from rlvr.rollout.engine import Completion, SamplingParams
from rlvr.rollout.models import load_tokenizer
from rlvr.rollout.runner import EpisodeSettings, run_episodes
from rlvr.types import Task

TASK = Task(
    id="py/add_2",
    domain="python",
    prompt="Write `add_2(x)` that returns x plus 2.",
    tests={"format": "assert", "tests": ["assert add_2(1) == 3", "assert add_2(0) == 2"]},
)
WRONG = "def add_2(x):\n    return 2\n```"
RIGHT = "def add_2(x):\n    return x + 2\n```"


class ScriptedEngine:
    """Replies from a script, one per turn; records every prompt it was given."""

    def __init__(self, tok, script: list[str]) -> None:  # type: ignore[no-untyped-def]
        self.tok, self.script, self.prompts = tok, script, []

    def generate(self, prompts: list[list[int]], params: SamplingParams, progress=None) -> list[Completion]:  # type: ignore[no-untyped-def]
        self.prompts.append([list(p) for p in prompts])
        text = self.script[min(len(self.prompts) - 1, len(self.script) - 1)]
        ids = self.tok(text, add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]
        return [Completion(list(ids), [-0.5] * len(ids), text, "eos") for _ in prompts]

    version = 0
    shares_weights = True

    def load_version(self, version: int, weights: object) -> None:
        self.version = version


def _run(script: list[str], **kw):  # type: ignore[no-untyped-def]
    tok = load_tokenizer("tiny-random")
    engine = ScriptedEngine(tok, script)
    trajs = run_episodes(
        [TASK], engine=engine, tokenizer=tok, params=SamplingParams(max_new_tokens=32),
        episodes=EpisodeSettings(EnvSettings(), response_prefix="```python\n", **kw),
    )  # fmt: skip
    return tok, engine, trajs[0]


def test_second_attempt_fixes_the_first() -> None:
    tok, engine, t = _run([WRONG, RIGHT], max_turns=3)
    assert [turn.role for turn in t.turns] == ["user", "assistant", "user", "assistant"]
    assert "1 of 2 tests passed" in t.turns[2].content and "assert add_2(1) == 3" in t.turns[2].content
    assert t.reward is not None and t.reward.total == 1.0 and t.execution is not None and t.execution.passed == 2
    assert len(engine.prompts) == 2  # solved on the second turn: no third call
    # The learner's sequence is exactly what the policy saw: prompt + every token after it.
    second_prompt = engine.prompts[1][0]
    r1, r2 = t.turns[1].token_ids, t.turns[3].token_ids
    assert second_prompt == t.prompt_ids + t.completion_ids[: len(t.completion_ids) - len(r2)]
    assert t.completion_ids[: len(r1)] == r1 and t.completion_ids[-len(r2) :] == r2
    # Loss mask: 1 on both replies, 0 on the feedback between them; behaviour log-probs kept.
    n_fb = len(t.completion_ids) - len(r1) - len(r2)
    assert n_fb > 10 and t.loss_mask == [1] * len(r1) + [0] * n_fb + [1] * len(r2)
    assert t.logprobs == [-0.5] * len(r1) + [0.0] * n_fb + [-0.5] * len(r2)
    feedback_text = tok.decode(t.completion_ids[len(r1) : len(r1) + n_fb])
    assert "tests passed" in feedback_text and feedback_text.rstrip().endswith("```python")
    assert t.timings["turns"] == 2.0


def test_single_turn_stops_after_one_attempt() -> None:
    _, engine, t = _run([WRONG, RIGHT], max_turns=1)
    assert len(engine.prompts) == 1 and t.reward is not None and t.reward.total == 0.5
    assert t.loss_mask == [1] * len(t.completion_ids)
    assert t.finish_reason == "eos"  # one attempt was all it had: not a budget cut


def test_context_budget_ends_the_episode_with_its_last_reward() -> None:
    _, engine, t = _run([WRONG, RIGHT], max_turns=3, max_context_tokens=120)
    assert len(engine.prompts) == 1 and t.finish_reason == "context"
    assert t.reward is not None and t.reward.total == 0.5


def test_every_attempt_wrong_keeps_every_turn() -> None:
    _, engine, t = _run([WRONG], max_turns=3)
    assert len(engine.prompts) == 3 and sum(turn.role == "assistant" for turn in t.turns) == 3
    assert t.reward is not None and t.reward.total == 0.5
    assert t.finish_reason == "turns"  # it wanted another attempt: a budget cut (algo.compact_filter)


def test_the_policy_s_own_context_limit_bounds_an_episode() -> None:
    """No max_context_tokens set: the engine's context_limit (the model's positions) is the budget."""
    tok = load_tokenizer("tiny-random")
    engine = ScriptedEngine(tok, [WRONG, RIGHT])
    engine.context_limit = 120  # type: ignore[attr-defined]
    trajs = run_episodes(
        [TASK], engine=engine, tokenizer=tok, params=SamplingParams(max_new_tokens=32),
        episodes=EpisodeSettings(EnvSettings(), response_prefix="```python\n", max_turns=3),
    )  # fmt: skip
    assert len(engine.prompts) == 1 and trajs[0].finish_reason == "context"
    engine = ScriptedEngine(tok, [WRONG, RIGHT])
    engine.context_limit = 120  # type: ignore[attr-defined]
    looser = EpisodeSettings(EnvSettings(), response_prefix="```python\n", max_turns=3, max_context_tokens=4096)
    trajs = run_episodes(
        [TASK], engine=engine, tokenizer=tok, params=SamplingParams(max_new_tokens=32), episodes=looser
    )
    assert len(engine.prompts) == 1 and trajs[0].finish_reason == "context"  # a looser setting does not lift it


def test_the_hf_engine_states_its_model_s_position_limit() -> None:
    from rlvr.rollout.hf import HFEngine
    from rlvr.rollout.models import load_policy

    model, tok = load_policy("tiny-random", seed=0)
    assert HFEngine(model, tok).context_limit == model.config.max_position_embeddings > 0
