"""The run: building it (`build.py`: restore a checkpoint's state, build the parts), the
loop (`loop.py`), checkpoints and their object-storage copy, the progress display, the
command-line preflight (`preflight.py`), `replay`, and the torchrun entry (`sharded.py`)."""
