"""A conversation as the token sequence an episode has, and which of its tokens are trained.

The prompt (every message before the first assistant reply) is rendered by the chat
template with the assistant turn opened, exactly as the rollout runner renders an
episode's opening; each reply is its text's tokens followed by the end-of-turn token
(what the policy emits to stop), trained; what comes between two replies (a tool's
answer, the environment's feedback, the next user message) is the chat template's
rendering past the reply, tokenized on its own as the runner does
(`rlvr.rollout.runner.continuation`), never trained. So supervised training and RL see
the same sequences, and a model fine-tuned here continues in the format the runner
reads.

A reply written as structured `tool_calls` (no text content) is the chat template's own
rendering of that assistant message, up to its end-of-turn token. A reply whose content
starts with the run's response prefix has the prefix in the context, as in an episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from transformers import PreTrainedTokenizerBase

from rlvr.rollout.runner import continuation, render


class ExampleError(ValueError):
    """A conversation that cannot be a training example (the message says why)."""


@dataclass(frozen=True)
class Encoded:
    """One example's tokens: the prompt (never trained), then everything after it, with
    a mask (1: a reply's token, trained; 0: a tool's or user's tokens between replies)."""

    prompt_ids: list[int]
    completion_ids: list[int]
    mask: list[int]

    @property
    def length(self) -> int:
        return len(self.prompt_ids) + len(self.completion_ids)

    @property
    def trained(self) -> int:
        return sum(self.mask)


def encode(
    tokenizer: PreTrainedTokenizerBase,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None = None,
    response_prefix: str = "",
) -> Encoded:
    """The conversation's tokens and loss mask (see the module's docstring); raises
    ExampleError when it has no reply, starts with one, or its chat template rewrites
    earlier turns when later ones are added."""
    eos_id = tokenizer.eos_token_id
    if eos_id is None:
        raise ExampleError("the tokenizer has no end-of-turn (eos) token to end a reply with")
    replies = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if not replies:
        raise ExampleError("no assistant reply to learn")
    if replies[0] == 0:
        raise ExampleError("the first message is an assistant reply: there is no prompt before it")
    first = replies[0]
    text_reply, prefix = _reply(tokenizer, messages, first, tools, response_prefix)
    text = render(tokenizer, messages[:first], prefix, tools)
    prompt_ids: list[int] = tokenizer(text, add_special_tokens=False)["input_ids"]
    completion: list[int] = []
    mask: list[int] = []
    for k, i in enumerate(replies):
        if k:
            text_reply, prefix = _reply(tokenizer, messages, i, tools, response_prefix)
            cont = continuation(tokenizer, text, messages[:i], prefix, tools, after_eos=True)
            if cont is None:
                raise ExampleError(
                    f"the chat template renders the turns before reply {k + 1} differently once it is added "
                    "(it rewrites history): this conversation cannot be one token sequence"
                )
            text, between = cont
            completion += between
            mask += [0] * len(between)
        ids = [*tokenizer(text_reply, add_special_tokens=False)["input_ids"], eos_id]
        completion += ids
        mask += [1] * len(ids)
        text += text_reply
    return Encoded(prompt_ids, completion, mask)


def _reply(
    tokenizer: PreTrainedTokenizerBase,
    messages: list[dict[str, Any]],
    i: int,
    tools: list[dict[str, Any]] | None,
    response_prefix: str,
) -> tuple[str, str]:
    """(the text the policy generates for reply i, the response prefix in its context)."""
    m = messages[i]
    content = m.get("content")
    if content is None or content == "":
        if not m.get("tool_calls"):
            raise ExampleError(f"message {i + 1}: an assistant reply with neither content nor tool_calls")
        return _rendered_reply(tokenizer, messages, i, tools), ""
    if not isinstance(content, str):
        raise ExampleError(f"message {i + 1}: content must be text, got {type(content).__name__}")
    if response_prefix and content.startswith(response_prefix):
        return content[len(response_prefix) :], response_prefix
    return content, ""


def _rendered_reply(
    tokenizer: PreTrainedTokenizerBase, messages: list[dict[str, Any]], i: int, tools: list[dict[str, Any]] | None
) -> str:
    """An assistant message as its chat template writes it (structured tool calls), up to
    its end-of-turn token."""
    opened = render(tokenizer, messages[:i], "", tools)
    kwargs: dict[str, Any] = {"tools": tools} if tools and "tools" in str(tokenizer.chat_template or "") else {}
    whole = tokenizer.apply_chat_template(messages[: i + 1], tokenize=False, **kwargs)
    if not isinstance(whole, str) or not whole.startswith(opened):
        raise ExampleError(f"message {i + 1}: the chat template does not render this tool call after its prompt")
    span = whole[len(opened) :]
    eos = tokenizer.eos_token
    if eos and eos in span:
        span = span[: span.index(eos)]
    if not span.strip():
        raise ExampleError(f"message {i + 1}: the chat template renders these tool_calls as nothing")
    return span
