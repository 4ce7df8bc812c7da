"""Policy versions as files (rlvr.rollout.weights): written whole, read back, pruned."""

from pathlib import Path

import pytest
import torch

from rlvr.rollout.weights import prune_older, prune_versions, read_version, write_version


def test_versions_are_read_back_and_pruned(tmp_path: Path) -> None:
    root = str(tmp_path / "weights")
    for v in range(5):
        write_version(root, v, {"w": torch.full((2,), float(v)), "module.b": torch.zeros(1)})
    got = read_version(root, 4)
    assert torch.equal(got["w"], torch.full((2,), 4.0)) and set(got) == {"w", "b"}  # wrapper prefix removed
    assert prune_older(root, 3) == [0, 1, 2]  # what no ticket can ask for any more
    assert prune_versions(root, 4) == [3]
    assert sorted(p.name for p in (tmp_path / "weights").iterdir()) == ["v00000004"]
    with pytest.raises(FileNotFoundError, match="policy version 2 is not under"):
        read_version(root, 2)
    assert prune_older(str(tmp_path / "none"), 3) == []
