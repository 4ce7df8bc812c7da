"""Task sets: the schema is `rlvr.types.Task`; loaders and the deterministic split."""

from rlvr.tasks.loader import TaskLoadError, load_tasks, pick_eval_tasks, split_tasks

__all__ = ["TaskLoadError", "load_tasks", "pick_eval_tasks", "split_tasks"]
