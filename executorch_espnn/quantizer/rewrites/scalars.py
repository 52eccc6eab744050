"""A Python int operand of add, sub, rsub, mul or div of a float tensor -> the float it is
promoted to: ``x / n`` -> ``x / float(n)``, ``x + 1`` -> ``x + 1.0``.

PyTorch promotes the int to the tensor's float dtype, which ``to_edge`` writes as a lifted
int64 constant behind a ``_to_dim_order_copy`` to float: an operand the lowering cannot read
as a number, so the operator stayed on the CPU with a quantize/dequantize pair around it (the
annotator had quantized it as an operator with a number).  Writing the int as the float it is
promoted to is the same arithmetic (every int of magnitude <= 2^24 is exact in float32) and
leaves a plain number, which the lowering turns into a lookup table.
``torch.cumsum(h, 1) / h.shape[1]`` and ``x + 1`` are the common cases.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.fx import GraphModule, Node

aten = torch.ops.aten
_TARGETS = frozenset({
    aten.div.Tensor, aten.div_.Tensor, aten.div.Scalar,
    aten.add.Tensor, aten.add_.Tensor, aten.add.Scalar,
    aten.sub.Tensor, aten.sub_.Tensor, aten.sub.Scalar, aten.rsub.Scalar,
    aten.mul.Tensor, aten.mul_.Tensor, aten.mul.Scalar,
})
_EXACT = 1 << 24  # ints up to this magnitude are exact in float32


def _float_tensor(n: object) -> bool:
    val = n.meta.get("val") if isinstance(n, Node) else None
    return isinstance(val, torch.Tensor) and val.dtype.is_floating_point


def _exact_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) <= _EXACT


def rewrite_int_scalars(gm: GraphModule, quantized: Callable[[Node], bool]) -> bool:
    changed = False
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target not in _TARGETS or not quantized(node):
            continue
        if node.kwargs.get("rounding_mode") is not None or len(node.args) < 2:
            continue
        a, b = node.args[0], node.args[1]
        if _float_tensor(a) and _exact_int(b):
            node.args = (a, float(b), *node.args[2:])
            changed = True
        elif _float_tensor(b) and _exact_int(a):
            node.args = (float(a), b, *node.args[2:])
            changed = True
    return changed
