"""Bilinear upsampling (``upsample_bilinear2d``, align_corners either way, scale factors or
output sizes, also downsampling without antialiasing): UPSAMPLE_BILINEAR.

The coordinate tables come from PyTorch's own operator: run on two float64 index ramps (row
numbers, column numbers) with the node's own arguments, output row ``y`` reads
``i0 + lambda`` (rows ``i0`` and ``i0 + 1`` with weights ``1 - lambda`` and ``lambda``; the last
row reads itself).  ``lambda`` is stored in units of 2^-BILINEAR_FRAC_BITS; the engine sums
the four weighted int8 values exactly and rounds once.  Against PyTorch's float32
interpolation of the dequantized input, each weight is off by at most 2^-12, so the result
is within one output step (exact on integer scale factors, whose weights are dyadic).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import torch

from ..graph.names import node_op, static_shape
from ..layout import nhwc
from ..payload import Opcode
from ..payload.format import BILINEAR_ONE
from ..payload_builder import PayloadBuilder
from ..unsupported import Unsupported
from .activation import aten_overload
from .base import OpLowering, Unit, register
from .common import emit_moved

I32 = npt.NDArray[np.int32]


def _split(coord: npt.NDArray[np.float64], size: int) -> tuple[I32, I32]:
    """Source coordinates -> (lower index, weight of the next one in 2^-11 units)."""
    idx = np.clip(np.floor(coord), 0, size - 1).astype(np.int64)
    frac = np.rint((coord - idx) * BILINEAR_ONE).astype(np.int64)
    frac = np.where(idx >= size - 1, 0, np.clip(frac, 0, BILINEAR_ONE))
    return idx.astype(np.int32), frac.astype(np.int32)


def bilinear_tables(node: torch.fx.Node, h: int, w: int, oh: int, ow: int) -> tuple[I32, I32, I32, I32]:
    """(y_index, y_frac, x_index, x_frac) of ``node``'s resampling of an ``h x w`` input."""
    ramps = torch.empty(1, 2, h, w, dtype=torch.float64)
    ramps[0, 0] = torch.arange(h, dtype=torch.float64)[:, None]
    ramps[0, 1] = torch.arange(w, dtype=torch.float64)[None, :]
    res = aten_overload(node_op(node))(ramps, *node.args[1:], **node.kwargs)
    if tuple(res.shape) != (1, 2, oh, ow):
        raise Unsupported(f"the coordinate tables ({tuple(res.shape)}) do not match the output shape")
    rows, cols = res[0, 0].numpy(), res[0, 1].numpy()
    if not (np.allclose(rows, rows[:, :1]) and np.allclose(cols, cols[:1, :])):
        raise Unsupported("the resampling is not separable into row and column tables")
    y_index, y_frac = _split(rows[:, 0], h)
    x_index, x_frac = _split(cols[0, :], w)
    return y_index, y_frac, x_index, x_frac


@register
class UpsampleBilinear(OpLowering):
    targets = ("aten.upsample_bilinear2d.vec", "aten.upsample_bilinear2d.default")

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        if x.rank != 4:
            raise Unsupported(f"bilinear upsampling of a rank-{x.rank} tensor")
        n, c, h, w = x.shape
        out_shape = static_shape(unit.output)
        if len(out_shape) != 4 or out_shape[:2] != (n, c):
            raise Unsupported(f"unexpected output shape {out_shape}")
        tables = bilinear_tables(node, h, w, out_shape[2], out_shape[3])
        x_t = b.realize(x, nhwc(4))
        consts = [b.int32s(t) for t in tables]
        emit_moved(b, unit, x.qp, nhwc(4), lambda out: b.emit(Opcode.UPSAMPLE_BILINEAR, [x_t, *consts], out))
