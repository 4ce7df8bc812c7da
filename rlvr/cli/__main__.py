"""`python -m rlvr.cli ...` (torchrun launches it so)."""

import sys

from rlvr.cli.main import main

sys.exit(main())
