"""Ray roles only: the rollout workers and the learner (`ray_runner.py`), the sandbox
workers, their elastic pool and the rollout workers' fleet (`sandbox_workers.py`,
`sandbox_scaler.py`). They place the same components the single-process run uses (the
producer, the channel, the learner) on Ray actors; the queue and its redis-server live in
rlvr.pipeline. This is the only package that imports Ray, and only rlvr.cli imports it."""
