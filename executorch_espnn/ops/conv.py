"""conv2d: dense, depthwise (with channel multiplier), grouped, strided, padded, dilated."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..payload import Opcode
from ..payload.format import MAX_REDUCTION
from ..scratch import ConvGeometry, conv_scratch, depthwise_scratch
from . import OpLowering, Unit, Unsupported, register
from .common import act_range, channel_requant, pair, quantize_bias

if TYPE_CHECKING:
    from torch.fx import Node

    from ..lowering_graph import GraphContext
    from ..payload_builder import PayloadBuilder


@register
class Conv2d(OpLowering):
    targets = ("aten.convolution.default",)
    fuses_activation = True

    def weight_nodes(self, node: Node, ctx: GraphContext) -> list[Node]:
        from torch.fx import Node as FxNode

        return [a for a in node.args[1:3] if isinstance(a, FxNode) and a.op == "call_function"]

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        from ..lowering_graph import node_arg, qdq_params, static_shape
        from ..payload_builder import nhwc

        node = unit.anchor
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        if x.rank != 4:
            raise Unsupported(f"{x.rank - 2}-D convolution; only 2-D convolutions are delegated")
        if node_arg(node, 6, "transposed"):
            raise Unsupported("transposed convolution is not supported by ESP-NN")
        if any(int(p) for p in node_arg(node, 7, "output_padding")):
            raise Unsupported("output_padding is not supported")
        sh, sw = pair(node_arg(node, 3, "stride"), "stride")
        ph, pw = pair(node_arg(node, 4, "padding"), "padding")
        dh, dw = pair(node_arg(node, 5, "dilation"), "dilation")
        groups = int(node_arg(node, 8, "groups"))
        w = b.ctx.weight(node.args[1], "the convolution weight")
        if w.values.ndim != 4 or w.axis != 0:
            raise Unsupported("convolution weights must be [out, in/groups, kh, kw] quantized per output channel")
        n, cin, h, wd = x.shape
        cout, cin_g, kh, kw = w.values.shape
        if groups < 1 or cin % groups or cout % groups or cin_g * groups != cin:
            raise Unsupported(f"groups={groups} does not divide {cin} input and {cout} output channels")
        qout = qdq_params(unit.output)
        out_shape = static_shape(unit.output)
        if out_shape[:2] != (n, cout) or len(out_shape) != 4:
            raise Unsupported(f"unexpected output shape {out_shape}")
        oh, ow = out_shape[2], out_shape[3]
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
        bias = quantize_bias(b.ctx.bias(node.args[2], "the convolution bias"), acc_scales, "the convolution bias")
        act_min, act_max = act_range(unit, qout)

        x_t = b.realize(x, nhwc(4))
        _, out_t = b.define(unit.output, nhwc(4))
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
        b.emit(
            opcode,
            [x_t, b.constant(filt), None if bias is None else b.constant(bias), b.constant(mult), b.constant(shift)],
            out_t,
            params,
            scratch,
        )
