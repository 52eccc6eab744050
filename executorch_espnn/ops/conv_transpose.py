"""Transposed convolutions (conv_transpose2d, conv_transpose1d): TRANSPOSE_CONV2D, the engine's
own kernel (ESP-NN has none).

Stride, padding, output padding, dilation and groups are all delegated.  The weight is
PyTorch's ``[in, out/groups, kh, kw]``, quantized per output channel on axis 1 (with groups,
the scale of output channel ``c`` is that of ``c % (out/groups)``); the payload stores it as
``[out, kh, kw, in/groups]`` (OHWI, as CONV2D) and requantises per output channel.  A
conv_transpose1d on ``[N, C, L]`` runs as the 2-D one of its ``[N, C, 1, L]`` view (kernel
(1, k)), as conv1d does.  Refused (the operator stays on the CPU): 3-D transposed
convolutions, a reduction ``KH * KW * Cin/groups`` above 65535, and what the engine cannot
represent anyway (multipliers >= 1, biases beyond 2^24 accumulator units).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..graph.constants import QuantWeight
from ..graph.names import node_arg, static_shape
from ..graph.qdq import qdq_params
from ..layout import nhwc
from ..payload import Opcode
from ..payload.families.conv_transpose.check import transposed_out
from ..payload.format import MAX_REDUCTION
from ..payload_builder import PayloadBuilder, Value
from ..unsupported import Unsupported
from .base import Unit
from .common import act_range, channel_requant, pair, quantize_bias, single


def lower_transposed(unit: Unit, b: PayloadBuilder, x: Value) -> None:
    """The transposed ``aten.convolution`` of ``unit`` (``x`` its input operand)."""
    node = unit.anchor
    assert x.qp is not None
    if x.rank not in (3, 4):
        raise Unsupported(f"{x.rank - 2}-D transposed convolution; only 1-D and 2-D ones are delegated")
    w = b.ctx.weight(node.args[1], "the transposed convolution weight")
    out_shape = static_shape(unit.output)
    if w.values.ndim != x.rank or len(out_shape) != x.rank:
        raise Unsupported(f"unexpected weight {w.values.shape} or output {out_shape} shape")
    groups = int(node_arg(node, 8, "groups"))
    if x.rank == 4:
        conv = _TConv(
            x, w, out_shape, groups,
            pair(node_arg(node, 3, "stride"), "stride"),
            pair(node_arg(node, 4, "padding"), "padding"),
            pair(node_arg(node, 5, "dilation"), "dilation"),
            pair(node_arg(node, 7, "output_padding"), "output_padding"),
        )
        conv.emit(unit, b, lambda: (b.realize(x, nhwc(4)), b.define(unit.output, nhwc(4))[1]))
        return
    n, c, length = x.shape
    x4 = b.reshaped(x, (n, c, 1, length))
    w4 = QuantWeight(w.values[:, :, None, :], w.scales, w.axis)
    out4 = (out_shape[0], out_shape[1], 1, out_shape[2])
    what = "1-D transposed convolution"
    conv = _TConv(
        x4, w4, out4, groups,
        (1, single(node_arg(node, 3, "stride"), "stride", what)),
        (0, single(node_arg(node, 4, "padding"), "padding", what)),
        (1, single(node_arg(node, 5, "dilation"), "dilation", what)),
        (0, single(node_arg(node, 7, "output_padding"), "output_padding", what)),
    )
    conv.emit(unit, b, lambda: (b.realize(x4, nhwc(4)), b.define_view(unit.output, out4, nhwc(4))[1]))


def _output_channel_scales(w: QuantWeight, groups: int, cout: int) -> np.ndarray:
    """Per output channel weight scales: axis 1 holds one group's output channels."""
    cout_g = cout // groups
    if w.axis == 1 and w.scales.shape[0] == cout_g:
        return np.tile(w.scales, groups)
    if np.all(w.scales == w.scales[0]):  # per tensor (read as axis 0): one scale for all
        return np.full(cout, w.scales[0])
    raise Unsupported(
        "transposed convolution weights must be quantized per output channel (axis 1 of "
        "[in, out/groups, kh, kw]) or per tensor"
    )


@dataclass(frozen=True)
class _TConv:
    """One 2-D transposed convolution over NCHW logical shapes (a 1-D one's with H = 1)."""

    x: Value
    w: QuantWeight  # [Cin, Cout/groups, KH, KW]
    out_shape: tuple[int, ...]
    groups: int
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    output_padding: tuple[int, int]

    def emit(self, unit: Unit, b: PayloadBuilder, tensors: Callable[[], tuple[int, int]]) -> None:
        x, w, groups = self.x, self.w, self.groups
        assert x.qp is not None
        n, cin, h, wd = x.shape
        w_in, cout_g, kh, kw = w.values.shape
        if groups < 1 or w_in != cin or cin % groups:
            raise Unsupported(f"groups={groups} does not divide the {cin} input channels of a {w.values.shape} weight")
        cout = cout_g * groups
        if self.out_shape[:2] != (n, cout):
            raise Unsupported(f"unexpected output shape {self.out_shape}")
        for what, size, k, s, p, d, op, o in (
            ("height", h, kh, self.stride[0], self.padding[0], self.dilation[0], self.output_padding[0],
             self.out_shape[2]),
            ("width", wd, kw, self.stride[1], self.padding[1], self.dilation[1], self.output_padding[1],
             self.out_shape[3]),
        ):
            if min(s, d) < 1 or p < 0 or not 0 <= op < max(s, d):
                raise Unsupported(f"stride/dilation/padding/output_padding ({s}, {d}, {p}, {op}) along {what}")
            if transposed_out(size, k, s, d, p, p, op) != o:
                raise Unsupported(f"output {what} {o} does not follow from the transposed convolution parameters")
        cin_g = cin // groups
        if kh * kw * cin_g > MAX_REDUCTION:
            raise Unsupported(
                f"each output sums up to {kh * kw * cin_g} products; the engine's exact int32 "
                f"accumulation allows {MAX_REDUCTION}"
            )
        qout = qdq_params(unit.output)
        acc_scales = x.qp.scale32 * _output_channel_scales(w, groups, cout)
        mult, shift = channel_requant(acc_scales * qout.inv_scale32, "transposed convolution")
        bias = quantize_bias(b.ctx.bias(unit.anchor.args[2], "the transposed convolution bias"), acc_scales,
                             "the transposed convolution bias")
        act_min, act_max = act_range(unit, qout)
        # [Cin, Cout/g, KH, KW] -> [Cout, KH, KW, Cin/g]: output channel g*cout_g + j reads
        # input channels g*cin_g ... of weight column j
        v = w.values.reshape(groups, cin_g, cout_g, kh, kw)
        filt = np.ascontiguousarray(v.transpose(0, 2, 3, 4, 1).reshape(cout, kh, kw, cin_g))
        (sh, sw), (ph, pw), (dh, dw), (oph, opw) = self.stride, self.padding, self.dilation, self.output_padding
        x_t, out_t = tensors()
        b.emit(
            Opcode.TRANSPOSE_CONV2D,
            [x_t, b.constant(filt), None if bias is None else b.constant(bias), b.constant(mult), b.constant(shift)],
            out_t,
            {
                "stride_h": sh, "stride_w": sw, "pad_top": ph, "pad_left": pw, "pad_bottom": ph, "pad_right": pw,
                "dilation_h": dh, "dilation_w": dw, "out_pad_h": oph, "out_pad_w": opw, "groups": groups,
                "in_offset": -x.qp.zero_point, "out_offset": qout.zero_point, "act_min": act_min, "act_max": act_max,
            },
        )
