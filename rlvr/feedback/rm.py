"""A reward model: a causal LM's backbone with a scalar head, scoring a conversation (the
prompt's messages and one reply, through the model's chat template) at its last token.

It is a Hugging Face `*ForSequenceClassification` model with one label, the layout
TRL's RewardTrainer, verl and OpenRLHF read, so a saved reward model loads anywhere with
`AutoModelForSequenceClassification.from_pretrained(dir)`. rlvr adds one file beside the
weights, `rlvr_reward_model.json`: the base model, how it was trained, its held-out
figures, and the mean and spread of its scores on the training outputs (what a reward
term normalises by).

The score is read at the last token of the sequence (rlvr pads on the right and never
truncates a reply: an example over `max_length` is left out). Hugging Face's own pooling
reads the last token that is not padding, which is the same token unless a conversation
ends with the pad token (SmolLM2's template ends with a newline after <|im_end|>).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from rlvr.feedback import REWARD_MODEL_META
from rlvr.feedback.records import FeedbackError, Message

META_FILE = REWARD_MODEL_META
META_VERSION = 1


def from_causal_lm(base: PreTrainedModel, tok: PreTrainedTokenizerBase, seed: int) -> PreTrainedModel:
    """A one-label sequence classifier sharing `base`'s backbone weights, its head drawn
    from `seed` (the backbone's init is not redrawn: its weights are copied over)."""
    cfg = base.config.__class__.from_dict(base.config.to_dict())
    cfg.num_labels = 1
    cfg.pad_token_id = tok.pad_token_id
    cfg.problem_type = "regression"
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        rm = AutoModelForSequenceClassification.from_config(cfg)
    score_head(rm)
    missing = rm.base_model.load_state_dict(base.base_model.state_dict(), strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys
    rm.to(next(base.parameters()).dtype)
    return rm


def encode(tok: PreTrainedTokenizerBase, prompt: Sequence[Message], reply: str, max_length: int) -> list[int] | None:
    """The token ids of the conversation with `reply` as the assistant's turn; None when
    it is longer than `max_length` (never cut: a cut reply is scored for what it lacks)."""
    msgs = [{"role": r, "content": c} for r, c in prompt] + [{"role": "assistant", "content": reply}]
    text = tok.apply_chat_template(msgs, tokenize=False)
    ids = list(tok(text, add_special_tokens=False)["input_ids"])
    return ids if len(ids) <= max_length else None


def forward_scores(rm: PreTrainedModel, seqs: Sequence[Sequence[int]], pad_id: int) -> torch.Tensor:
    """The score of each sequence, [B], read at its last token (right padding)."""
    device = next(rm.parameters()).device
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, : len(s)] = 1
    ids, mask = ids.to(device), mask.to(device)
    hidden = rm.base_model(input_ids=ids, attention_mask=mask).last_hidden_state  # [B, L, H]
    last = mask.sum(dim=1) - 1  # [B]
    pooled = hidden[torch.arange(len(seqs), device=device), last]  # [B, H]
    return score_head(rm)(pooled).squeeze(-1).float()  # [B]


def score_head(rm: PreTrainedModel) -> torch.nn.Module:
    """The scalar head of a `*ForSequenceClassification` model."""
    head = getattr(rm, "score", None)
    if not isinstance(head, torch.nn.Module):
        raise FeedbackError(f"{type(rm).__name__} has no 'score' head: rlvr's reward models need a decoder LM")
    return head


def save(rm: PreTrainedModel, tok: PreTrainedTokenizerBase, out: Path, meta: dict[str, Any]) -> None:
    """The model, its tokenizer and rlvr's metadata, written to `out` (created)."""
    out.mkdir(parents=True, exist_ok=True)
    rm.save_pretrained(str(out))
    tok.save_pretrained(str(out))
    (out / META_FILE).write_text(json.dumps({"version": META_VERSION, **meta}, indent=2) + "\n")


class RewardModel:
    """A saved reward model, for scoring: `RewardModel.load(dir).score(prompts, replies)`."""

    def __init__(
        self, model: PreTrainedModel, tok: PreTrainedTokenizerBase, meta: dict[str, Any], max_length: int
    ) -> None:
        self.model, self.tok, self.meta, self.max_length = model, tok, meta, max_length

    @classmethod
    def load(cls, path: str | Path, *, device: str = "cpu") -> RewardModel:
        p = Path(path)
        meta_file = p / META_FILE
        if not meta_file.is_file():
            raise FeedbackError(f"{p}: not an rlvr reward model (no {META_FILE}; train one with rlvr rm train)")
        meta = json.loads(meta_file.read_text())
        if meta.get("version") != META_VERSION:
            raise FeedbackError(f"{meta_file}: version {meta.get('version')!r}, this rlvr reads {META_VERSION}")
        model = AutoModelForSequenceClassification.from_pretrained(str(p)).to(device).eval()
        tok = AutoTokenizer.from_pretrained(str(p))
        return cls(model, tok, meta, int(meta.get("max_length", 2048)))

    @torch.no_grad()
    def score(
        self, prompts: Sequence[Sequence[Message]], replies: Sequence[str], batch_size: int = 8
    ) -> list[float | None]:
        """One score per (prompt, reply); None where the conversation is over max_length."""
        pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id
        encoded = [encode(self.tok, p, r, self.max_length) for p, r in zip(prompts, replies, strict=True)]
        out: list[float | None] = [None] * len(encoded)
        todo = [i for i, e in enumerate(encoded) if e is not None]
        todo.sort(key=lambda i: len(encoded[i] or ()))  # similar lengths share a batch
        for k in range(0, len(todo), batch_size):
            idx = todo[k : k + batch_size]
            s = forward_scores(self.model, [encoded[i] or [] for i in idx], pad)
            for i, v in zip(idx, s.tolist(), strict=True):
                out[i] = float(v)
        return out
