"""Running beyond one process: the durable trajectory queue (`queue.py`, Redis Streams or
in memory) and a local redis-server for it (`redis_server.py`). Ray actors and object
storage come here too (issue 15); this is the only package that will import Ray."""
