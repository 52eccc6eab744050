"""conv2d and conv1d: dense, depthwise (with channel multiplier), grouped, strided, padded, dilated;
transposed ones are ``conv_transpose``'s.

A conv1d on [N, C, L] runs as the conv2d of its [N, C, 1, L] view (kernel (1, k), stride
(1, s), padding (0, p), dilation (1, d)), as TFLite converts Conv1D: NHWC [N, 1, L, C] has
the bytes of [N, L, C], so the view costs at most a RESHAPE planned in place, and a conv1d
reading another conv1d's result reads its 4-D tensor directly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from torch.fx import Node

from ..graph.constants import GraphContext, QuantWeight
from ..graph.names import node_arg, static_shape
from ..graph.qdq import qdq_params
from ..layout import nhwc
from ..payload import Opcode
from ..payload.format import MAX_REDUCTION
from ..payload_builder import PayloadBuilder, Value
from ..scratch import ConvGeometry, conv_scratch, depthwise_scratch
from ..unsupported import Unsupported
from .base import OpLowering, Unit, register
from .common import act_range, channel_requant, pair, quantize_bias, single
from .conv_transpose import lower_transposed


@register
class Convolution(OpLowering):
    targets = ("aten.convolution.default",)
    fuses_activation = True

    def weight_nodes(self, node: Node, ctx: GraphContext) -> list[Node]:
        return [a for a in node.args[1:3] if isinstance(a, Node) and a.op == "call_function"]

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        if x.rank not in (3, 4):
            raise Unsupported(f"{x.rank - 2}-D convolution; only 1-D and 2-D convolutions are delegated")
        if node_arg(node, 6, "transposed"):
            lower_transposed(unit, b, x)
            return
        if any(int(p) for p in node_arg(node, 7, "output_padding")):
            raise Unsupported("output_padding is not supported")
        w = b.ctx.weight(node.args[1], "the convolution weight")
        if w.values.ndim != x.rank or w.axis != 0:
            shape = "[out, in/groups, k]" if x.rank == 3 else "[out, in/groups, kh, kw]"
            raise Unsupported(f"convolution weights must be {shape} quantized per output channel")
        out_shape = static_shape(unit.output)
        if len(out_shape) != x.rank:
            raise Unsupported(f"unexpected output shape {out_shape}")
        groups = int(node_arg(node, 8, "groups"))
        if x.rank == 4:
            conv = _Conv(
                x, w, out_shape, groups,
                pair(node_arg(node, 3, "stride"), "stride"),
                pair(node_arg(node, 4, "padding"), "padding"),
                pair(node_arg(node, 5, "dilation"), "dilation"),
            )
            conv.emit(unit, b, lambda: (b.realize(x, nhwc(4)), b.define(unit.output, nhwc(4))[1]))
        else:
            # conv1d: the conv2d of the [N, C, 1, L] views
            n, c, length = x.shape
            x4 = b.reshaped(x, (n, c, 1, length))
            w4 = replace(w, values=w.values[:, :, None, :])
            out4 = (out_shape[0], out_shape[1], 1, out_shape[2])
            conv = _Conv(
                x4, w4, out4, groups,
                (1, single(node_arg(node, 3, "stride"), "stride", "1-D convolution")),
                (0, single(node_arg(node, 4, "padding"), "padding", "1-D convolution")),
                (1, single(node_arg(node, 5, "dilation"), "dilation", "1-D convolution")),
            )
            conv.emit(unit, b, lambda: (b.realize(x4, nhwc(4)), b.define_view(unit.output, out4, nhwc(4))[1]))


@dataclass(frozen=True)
class _Conv:
    """One 2-D convolution over NCHW logical shapes (a conv1d's with H = 1)."""

    x: Value
    w: QuantWeight
    out_shape: tuple[int, ...]
    groups: int
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]

    def emit(self, unit: Unit, b: PayloadBuilder, tensors: Callable[[], tuple[int, int]]) -> None:
        """Check everything value-dependent, then emit CONV2D / DEPTHWISE_CONV2D on the
        (NHWC input, NHWC output) tensors ``tensors`` makes (only once nothing can fail)."""
        x, w, groups = self.x, self.w, self.groups
        assert x.qp is not None
        (sh, sw), (ph, pw), (dh, dw) = self.stride, self.padding, self.dilation
        n, cin, h, wd = x.shape
        cout, cin_g, kh, kw = w.values.shape
        if groups < 1 or cin % groups or cout % groups or cin_g * groups != cin:
            raise Unsupported(f"groups={groups} does not divide {cin} input and {cout} output channels")
        qout = qdq_params(unit.output)
        if self.out_shape[:2] != (n, cout):
            raise Unsupported(f"unexpected output shape {self.out_shape}")
        oh, ow = self.out_shape[2], self.out_shape[3]
        for what, size, k, s, p, d, o in (("height", h, kh, sh, ph, dh, oh), ("width", wd, kw, sw, pw, dw, ow)):
            if min(s, d) < 1 or p < 0:
                raise Unsupported(f"stride/dilation/padding ({s}, {d}, {p}) along {what}")
            span = size + 2 * p - d * (k - 1) - 1
            if span < 0 or span // s + 1 != o:
                raise Unsupported(f"output {what} {o} does not follow from the convolution parameters")
        depthwise = groups > 1 and groups == cin
        reduction = kh * kw * (1 if depthwise else cin_g)
        if reduction > MAX_REDUCTION:
            raise Unsupported(
                f"each output sums {reduction} products; the engine's exact int32 accumulation allows {MAX_REDUCTION}"
            )
        # the scales as the float program applies them (float32), so ties break its way
        acc_scales = x.qp.scale32 * w.scales
        mult, shift = channel_requant(acc_scales * qout.inv_scale32, "convolution")
        bias = quantize_bias(b.ctx.bias(unit.anchor.args[2], "the convolution bias"), acc_scales,
                             "the convolution bias")
        act_min, act_max = act_range(unit, qout)
        common = {
            "stride_h": sh, "stride_w": sw, "pad_top": ph, "pad_left": pw, "pad_bottom": ph, "pad_right": pw,
            "dilation_h": dh, "dilation_w": dw,
        }
        tail = {"in_offset": -x.qp.zero_point, "out_offset": qout.zero_point, "act_min": act_min, "act_max": act_max}
        geom = ConvGeometry(
            in_w=wd, in_h=h, in_ch=cin, filter_w=kw, filter_h=kh, out_w=ow, out_h=oh, out_ch=cout,
            pad_w=pw, pad_h=ph, stride_w=sw, stride_h=sh, ch_mult=cout // cin if depthwise else 1,
        )
        dilated = dh != 1 or dw != 1
        if depthwise:
            filt = np.ascontiguousarray(w.values[:, 0].transpose(1, 2, 0))[None]  # [1, KH, KW, Cout]
            opcode = Opcode.DEPTHWISE_CONV2D
            params = {**common, "ch_mult": cout // cin, **tail}
            scratch = 0 if dilated else depthwise_scratch(b.target, geom)
        else:
            filt = np.ascontiguousarray(w.values.transpose(0, 2, 3, 1))  # OHWI
            opcode = Opcode.CONV2D
            params = {**common, "groups": groups, **tail}
            # grouped and dilated convolutions run on the engine's own kernel, which needs no scratch
            scratch = conv_scratch(b.target, geom) if groups == 1 and not dilated else 0
        x_t, out_t = tensors()
        b.emit(
            opcode,
            [x_t, b.constant(filt), None if bias is None else b.constant(bias), b.constant(mult), b.constant(shift)],
            out_t,
            params,
            scratch,
        )
