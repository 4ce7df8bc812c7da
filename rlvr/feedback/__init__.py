"""Learning from people's feedback: feedback records in (`records`, `store`), the
examples a reward model trains on (`examples`, `rm_data`), reward models trained on them
(`rm`, `rm_metrics`, `rm_train`), the terms a run scores with (`terms`, `judge`) and
their audits (`audit`).

Feedback sits above `rewards` in the dependency order: it reads rewards, the sandbox,
tasks and config, and nothing above them (the trace store's groups reach it through the
CLI, already turned into records). The torch-free modules (`records`, `store`,
`examples`, `terms` until it first scores) import no model code, so `rlvr feedback
import` answers at once and a config naming the `learned` term validates at once.
"""

REWARD_MODEL_META = "rlvr_reward_model.json"
"""The file beside a reward model's weights that makes it an rlvr reward model."""
