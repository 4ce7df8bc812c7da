"""rlvr.sft.encode: a conversation as the tokens an episode has, replies trained and
nothing else (SmolLM2's tokenizer and chat template)."""

from __future__ import annotations

from typing import Any

import pytest
from transformers import AutoTokenizer

from rlvr.rollout.models import embedded_tokenizer_dir
from rlvr.rollout.runner import render
from rlvr.sft.encode import ExampleError, encode


@pytest.fixture(scope="module")
def tok() -> Any:
    return AutoTokenizer.from_pretrained(str(embedded_tokenizer_dir(None)))


def ids(tok: Any, text: str) -> list[int]:
    return list(tok(text, add_special_tokens=False)["input_ids"])


def test_one_reply_is_its_text_and_the_end_of_turn_token_after_the_runner_s_prompt(tok: Any) -> None:
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]
    enc = encode(tok, [*msgs, {"role": "assistant", "content": "4"}])
    # the prompt is what the rollout runner feeds the policy: the template, assistant turn opened
    assert enc.prompt_ids == ids(tok, render(tok, msgs, ""))
    assert tok.decode(enc.prompt_ids).endswith("<|im_start|>assistant\n")
    assert enc.completion_ids == [*ids(tok, "4"), tok.eos_token_id]
    assert enc.mask == [1] * len(enc.completion_ids)
    assert enc.trained == len(enc.completion_ids) and enc.length == len(enc.prompt_ids) + enc.trained


def test_between_replies_the_template_s_turns_are_context_not_trained(tok: Any) -> None:
    convo = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "attempt one"},
        {"role": "user", "content": "2 tests failed"},
        {"role": "assistant", "content": "attempt two"},
    ]
    enc = encode(tok, convo)
    one = [*ids(tok, "attempt one"), tok.eos_token_id]
    # after the reply's <|im_end|>: the rest of the template's rendering, up to the next reply
    between = ids(tok, "\n<|im_start|>user\n2 tests failed<|im_end|>\n<|im_start|>assistant\n")
    two = [*ids(tok, "attempt two"), tok.eos_token_id]
    assert enc.completion_ids == one + between + two
    assert enc.mask == [1] * len(one) + [0] * len(between) + [1] * len(two)
    # the whole sequence is the template's rendering of the conversation (bar its last newline)
    whole = tok.apply_chat_template(convo, tokenize=False)
    assert tok.decode(enc.prompt_ids + enc.completion_ids) == whole.rstrip("\n")


def test_a_reply_starting_with_the_response_prefix_has_the_prefix_in_its_context(tok: Any) -> None:
    msgs = [{"role": "user", "content": "write f"}]
    enc = encode(tok, [*msgs, {"role": "assistant", "content": "```python\nf = 1\n```"}], response_prefix="```python\n")
    assert enc.prompt_ids == ids(tok, render(tok, msgs, "```python\n"))
    assert enc.completion_ids == [*ids(tok, "f = 1\n```"), tok.eos_token_id]
    # a reply without the prefix is learned whole, the prefix absent from its context
    plain = encode(tok, [*msgs, {"role": "assistant", "content": "f = 1"}], response_prefix="```python\n")
    assert plain.prompt_ids == ids(tok, render(tok, msgs, ""))


def test_conversations_that_are_not_examples_say_why(tok: Any) -> None:
    with pytest.raises(ExampleError, match="no assistant reply"):
        encode(tok, [{"role": "user", "content": "hi"}])
    with pytest.raises(ExampleError, match="no prompt before it"):
        encode(tok, [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "x"}])
    with pytest.raises(ExampleError, match="neither content nor tool_calls"):
        encode(tok, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}])


def test_a_template_that_rewrites_earlier_turns_is_refused(tok: Any) -> None:
    forgetful = AutoTokenizer.from_pretrained(str(embedded_tokenizer_dir(None)))
    # renders only the last two messages: adding a turn changes what came before
    forgetful.chat_template = (
        "{% for m in messages[-2:] %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    convo = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "d"},
    ]
    with pytest.raises(ExampleError, match="rewrites history"):
        encode(forgetful, convo)


def test_structured_tool_calls_are_the_template_s_own_rendering(tok: Any) -> None:
    with_tools = AutoTokenizer.from_pretrained(str(embedded_tokenizer_dir(None)))
    with_tools.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
        "{% if m.get('tool_calls') %}{% for c in m['tool_calls'] %}<call>{{ c['function']['name'] }}</call>"
        "{% endfor %}{% else %}{{ m['content'] }}{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    call = {"type": "function", "function": {"name": "get_quote", "arguments": {"symbol": "X"}}}
    convo = [
        {"role": "user", "content": "price of X?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "42"},
        {"role": "assistant", "content": "42"},
    ]
    enc = encode(with_tools, convo)
    first = [*ids(with_tools, "<call>get_quote</call>"), with_tools.eos_token_id]
    assert enc.completion_ids[: len(first)] == first and enc.mask[: len(first)] == [1] * len(first)
    assert with_tools.decode(enc.prompt_ids + enc.completion_ids) == with_tools.apply_chat_template(
        convo, tokenize=False
    ).rstrip("\n")
