"""The update: `learner.py` (the loss passes and the optimizer step), `prepare.py` (what
the update needs per trajectory: masks, advantages, importance weights), `logprobs.py`
(chunked fused head, shared prompts), the FSDP2 learner (`sharded.py`,
`sharded_protocol.py`) and its collectives (`collectives.py`)."""
