"""Rollouts to the learner: the producer (`producer.py`), the channel (`channel.py`, over
a TrajectoryQueue: `redis_queue.py`, with `redis_server.py` for the run's own server),
the drivers (`drivers.py`: inline and thread; the Ray learner in rlvr.dist is the third),
the rules they share (`staleness.py`) and the experience buffer (`buffer.py`)."""
