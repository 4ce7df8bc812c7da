"""Linear layers with pre-packed weights for decoding on a CPU.

Decoding multiplies a handful of rows (one token per sequence) by every weight matrix
of the model. For such short-and-wide products the BLAS that `torch.nn.functional.linear`
calls on a CPU runs far below both the memory bandwidth and the arithmetic peak (on a
2-core AVX-512 machine the 49152 x 576 output head takes ~20 ms at 16 rows); oneDNN with
the weight reordered once into its blocked layout takes ~6 ms. `packed_linears(model)`
packs every eligible `nn.Linear` for the duration of a block (a copy of the weights,
released at the end) and routes its forward through oneDNN; outside the block nothing
changes. Results are float32 products like the plain ones (they differ by summation
order only, relative 1e-6), so behaviour log-probs still agree with the learner's.

Eligible: float32 weights on the CPU, no gradient recording (generation runs under
`torch.no_grad()`), oneDNN available. Under a bfloat16 autocast region the weights are
packed in bfloat16 and the inputs cast to it, as autocast itself would do, where the
CPU can (AVX-512 or AVX-NE-CONVERT; `packing_supported`). Anything else keeps the plain
forward.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch


def packing_available(device: torch.device) -> bool:
    """True where packed products can run: a CPU device and a torch built with oneDNN."""
    if device.type != "cpu" or not torch.backends.mkldnn.is_available():
        return False
    return hasattr(torch.ops.mkldnn, "_linear_pointwise")


_PACKABLE: dict[torch.dtype, bool] = {}


def packing_supported(dtype: torch.dtype) -> bool:
    """Whether this CPU can pack weights in `dtype`: oneDNN's bfloat16 packing needs
    AVX-512 (BW, VL, DQ) or AVX-NE-CONVERT, which an AVX2-only CPU lacks. Probed once
    per dtype on a small matrix; where it fails, the plain (autocast) forward runs."""
    if dtype not in _PACKABLE:
        try:
            torch.ops.mkldnn._reorder_linear_weight(torch.zeros(8, 8, dtype=dtype), 8)
            _PACKABLE[dtype] = True
        except RuntimeError:
            _PACKABLE[dtype] = False
    return _PACKABLE[dtype]


class _PackedForward:
    """Replaces one Linear's forward while packed; falls back to the plain product when
    gradients are being recorded."""

    def __init__(self, module: torch.nn.Linear, dtype: torch.dtype, rows_hint: int) -> None:
        self.module = module
        self.dtype = dtype
        self.packed = torch.ops.mkldnn._reorder_linear_weight(module.weight.detach().to(dtype), rows_hint)
        bias = module.bias.detach() if module.bias is not None else None
        self.bias = bias.to(dtype) if bias is not None else None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled():
            return torch.nn.functional.linear(x, self.module.weight, self.module.bias)
        return torch.ops.mkldnn._linear_pointwise(x.to(self.dtype), self.packed, self.bias, "none", [], "")


@contextlib.contextmanager
def packed_linears(model: torch.nn.Module, rows_hint: int = 16) -> Iterator[int]:
    """Within the block, the model's eligible Linear layers multiply with pre-packed
    weights; yields how many were packed (0 where packing is unavailable)."""
    device = next(model.parameters()).device
    if not packing_available(device):
        yield 0
        return
    dtype = torch.bfloat16 if torch.is_autocast_enabled("cpu") else torch.float32
    if (dtype == torch.bfloat16 and torch.get_autocast_dtype("cpu") != torch.bfloat16) or not packing_supported(dtype):
        yield 0
        return
    swapped: list[torch.nn.Module] = []
    try:
        for module in model.modules():
            if (
                isinstance(module, torch.nn.Linear)
                and "forward" not in module.__dict__
                and module.weight.dtype == torch.float32
                and module.weight.device.type == "cpu"
            ):
                module.forward = _PackedForward(module, dtype, rows_hint)  # type: ignore[method-assign,assignment]
                swapped.append(module)
        yield len(swapped)
    finally:
        for module in swapped:
            del module.forward
