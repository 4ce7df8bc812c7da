"""The stage before RL: supervised fine-tuning (`rlvr sft`) on chat data, exports of
earlier runs and the tasks' references, on the same model, checkpoint and trace code as
`rlvr train`; rejection-sampling fine-tuning builds on it. docs/sft.md."""
