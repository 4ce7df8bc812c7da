"""Config validation in a fresh interpreter: the built-in algorithm names need no torch."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.config import ConfigError, load_config


def test_the_builtin_algorithm_names_match_the_registries_and_need_no_torch() -> None:
    """Configs are validated against rlvr.algos.names without importing torch; the lists
    there must be exactly what the registries hold (plugins aside), and a name not in
    them is still looked up in the registries."""
    import subprocess
    import sys

    from rlvr.algos.names import BUILTIN, registered

    for kind, names in BUILTIN.items():
        assert sorted(names) == sorted(registered(kind)), kind
    from rlvr.algos.advantages import NEEDS
    from rlvr.algos.names import BUILTIN_ESTIMATORS

    assert {n: NEEDS[n] for n in BUILTIN_ESTIMATORS} == BUILTIN_ESTIMATORS  # what each needs, read without torch
    code = (
        "import sys\nfrom rlvr.config import load_config\n"
        "keys = ['algo.policy_loss=gspo', 'algo.kl_coef=0.01', 'algo.kl_estimator=k1']\n"
        "load_config('examples/quickstart.yaml', keys)\n"
        "assert 'torch' not in sys.modules, 'validating a config imported torch'\n"
    )
    root = Path(__file__).parents[2]
    r = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    with pytest.raises(ConfigError, match="'ppo_clipped' is unknown; valid: gspo, ppo_clip"):
        load_config(str(root / "examples" / "quickstart.yaml"), ["algo.policy_loss=ppo_clipped"])
