"""Per-operator lowering: a one-op (or small) module → EspNNQuantizer → EspNNPartitioner →
.pte; the delegate must take the whole model, contain the expected payload ops, and the
payload run by the reference executor must match the convert_pt2e module within 1 LSB on
every element (on inputs that sit on the input quantization grid)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from devkit.lowering_helpers import Lowered, check_numerics, lower
from executorch_espnn.payload import Opcode
from executorch_espnn.reference import run_delegate


class Fn(nn.Module):
    """Wrap a function of the inputs as a module."""

    def __init__(self, fn: Callable[..., torch.Tensor], *mods: nn.Module) -> None:
        super().__init__()
        self.fn = fn
        self.mods = nn.ModuleList(mods)

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.fn(self.mods, *xs)


@dataclass
class Case:
    name: str
    make: Callable[[], nn.Module]
    shapes: tuple[tuple[int, ...], ...]
    ops: list[str]  # payload ops in order
    params: dict[str, int] = field(default_factory=dict)  # expected params of the first op named param_op
    param_op: str = ""  # default: ops[1]


class WithConstant(nn.Module):
    """x + c or x * c for a learned constant c (a positional embedding, a channel scale)."""

    def __init__(self, shape: tuple[int, ...], mul: bool = False) -> None:
        super().__init__()
        self.c = nn.Parameter(torch.randn(shape) * 0.5)
        self.mul = mul

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.c if self.mul else x + self.c


def conv(*a: Any, **k: Any) -> Callable[[], nn.Module]:
    return lambda: nn.Conv2d(*a, **k)


def conv1d(*a: Any, **k: Any) -> Callable[[], nn.Module]:
    return lambda: nn.Conv1d(*a, **k)


def seq(*mods: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    return lambda: nn.Sequential(*(m() for m in mods))


def f(fn: Callable[..., torch.Tensor], *mods: Callable[[], nn.Module]) -> Callable[[], nn.Module]:
    return lambda: Fn(fn, *(m() for m in mods))


Q, DQ = "QUANTIZE", "DEQUANTIZE"
MEAN_PARAMS = {"shift": 0}
MMID = [Q, "RESHAPE", "MEAN_HW", "RESHAPE", DQ]

CONV_CASES = [
    Case("conv1x1", conv(16, 24, 1), ((1, 16, 7, 9),), [Q, "CONV2D", DQ], {"groups": 1, "pad_top": 0}),
    Case("conv3x3_s2_pad1_odd", conv(3, 8, 3, stride=2, padding=1), ((1, 3, 11, 13),), [Q, "CONV2D", DQ],
         {"stride_h": 2, "stride_w": 2, "pad_top": 1, "pad_right": 1}),
    Case("conv5x5_nobias", conv(4, 6, 5, padding=2, bias=False), ((1, 4, 9, 9),), [Q, "CONV2D", DQ]),
    Case("conv_rect_kernel", conv(5, 7, (3, 1), stride=(1, 2), padding=(1, 0)), ((1, 5, 8, 9),),
         [Q, "CONV2D", DQ], {"stride_w": 2, "pad_top": 1, "pad_left": 0}),
    Case("conv_channels_not_x8", conv(13, 11, 3, padding=1), ((1, 13, 6, 6),), [Q, "CONV2D", DQ]),
    Case("depthwise", conv(8, 8, 3, padding=1, groups=8), ((1, 8, 10, 10),), [Q, "DEPTHWISE_CONV2D", DQ],
         {"ch_mult": 1}),
    Case("depthwise_mult2_s2", conv(8, 16, 3, stride=2, padding=1, groups=8), ((1, 8, 9, 9),),
         [Q, "DEPTHWISE_CONV2D", DQ], {"ch_mult": 2, "stride_h": 2}),
    Case("grouped_g4", conv(16, 16, 3, padding=1, groups=4), ((1, 16, 8, 8),), [Q, "CONV2D", DQ], {"groups": 4}),
    Case("dilated_d2", conv(6, 6, 3, padding=2, dilation=2), ((1, 6, 10, 10),), [Q, "CONV2D", DQ],
         {"dilation_h": 2, "dilation_w": 2}),
    Case("dilated_depthwise", conv(8, 8, 3, padding=2, dilation=2, groups=8), ((1, 8, 9, 9),),
         [Q, "DEPTHWISE_CONV2D", DQ], {"dilation_h": 2}),
    Case("conv_bn_relu_folded", seq(conv(4, 8, 3, padding=1), lambda: nn.BatchNorm2d(8), nn.ReLU),
         ((1, 4, 8, 8),), [Q, "CONV2D", DQ]),
    Case("conv_relu6_fused", seq(conv(4, 8, 3), nn.ReLU6), ((1, 4, 8, 8),), [Q, "CONV2D", DQ]),
    Case("conv_hardtanh_kwargs_fused",
         f(lambda m, x: F.hardtanh(m[0](x), min_val=-0.5, max_val=1.5), conv(4, 8, 3)),
         ((1, 4, 8, 8),), [Q, "CONV2D", DQ]),
    Case("conv_clamp_fused", f(lambda m, x: torch.clamp(m[0](x), min=-1.0, max=2.0), conv(4, 8, 1)),
         ((1, 4, 8, 8),), [Q, "CONV2D", DQ]),
]

# conv1d runs as the conv2d of the [N, C, 1, L] view: QUANTIZE straight into [N, L, C], whose
# bytes are NHWC [N, 1, L, C] (the RESHAPEs are planned in place), never a TRANSPOSE
C1 = [Q, "RESHAPE", "CONV2D", "RESHAPE", DQ]
CONV1D_CASES = [
    Case("conv1d", conv1d(3, 6, 3), ((1, 3, 20),), C1,
         {"stride_h": 1, "stride_w": 1, "pad_top": 0, "pad_left": 0, "dilation_h": 1, "dilation_w": 1, "groups": 1}, "CONV2D"),
    Case("conv1d_s2_pad2_batch2", conv1d(5, 7, 4, stride=2, padding=2), ((2, 5, 17),), C1,
         {"stride_h": 1, "stride_w": 2, "pad_top": 0, "pad_bottom": 0, "pad_left": 2, "pad_right": 2}, "CONV2D"),
    Case("conv1d_dilated_d3", conv1d(4, 6, 3, padding=3, dilation=3), ((1, 4, 16),), C1,
         {"dilation_h": 1, "dilation_w": 3, "pad_left": 3}, "CONV2D"),
    Case("conv1d_depthwise", conv1d(8, 8, 5, padding=2, groups=8), ((2, 8, 30),),
         [Q, "RESHAPE", "DEPTHWISE_CONV2D", "RESHAPE", DQ], {"ch_mult": 1, "pad_left": 2, "pad_top": 0}, "DEPTHWISE_CONV2D"),
    Case("conv1d_depthwise_mult2_s2", conv1d(4, 8, 3, stride=2, groups=4), ((1, 4, 21),),
         [Q, "RESHAPE", "DEPTHWISE_CONV2D", "RESHAPE", DQ], {"ch_mult": 2, "stride_w": 2}, "DEPTHWISE_CONV2D"),
    Case("conv1d_grouped_g3", conv1d(6, 9, 3, padding=1, groups=3), ((1, 6, 12),), C1, {"groups": 3}, "CONV2D"),
    Case("conv1d_nobias", conv1d(3, 6, 5, bias=False), ((4, 3, 50),), C1),
    Case("conv1d_relu_fused", seq(conv1d(3, 8, 3, padding=1), nn.ReLU), ((1, 3, 16),), C1),
    Case("conv1d_same_padding", conv1d(4, 4, 5, padding="same"), ((1, 4, 11),), C1, {"pad_left": 2}, "CONV2D"),
    Case("conv1d_single_channel", conv1d(1, 1, 3), ((4, 1, 50),), C1),
    # the second conv1d reads the first's 4-D NHWC result itself: no op between them
    Case("conv1d_x2_chained", seq(conv1d(3, 8, 3, padding=1), nn.ReLU, conv1d(8, 4, 3, stride=2)), ((2, 3, 24),),
         [Q, "RESHAPE", "CONV2D", "CONV2D", "RESHAPE", DQ]),
]

LINEAR_CASES = [
    Case("linear_2d", lambda: nn.Linear(20, 10), ((3, 20),), [Q, "FULLY_CONNECTED", DQ]),
    Case("linear_3d", lambda: nn.Linear(16, 8), ((1, 5, 16),), [Q, "FULLY_CONNECTED", DQ]),
    Case("linear_nobias", lambda: nn.Linear(12, 7, bias=False), ((2, 12),), [Q, "FULLY_CONNECTED", DQ]),
    Case("linear_relu_fused", seq(lambda: nn.Linear(12, 7), nn.ReLU), ((2, 12),), [Q, "FULLY_CONNECTED", DQ]),
]

ELEMENTWISE_CASES = [
    Case("add", f(lambda m, x, y: x + y), ((1, 4, 5, 6), (1, 4, 5, 6)), [Q, Q, "ADD", DQ]),
    Case("add_relu_fused", f(lambda m, x, y: F.relu(x + y)), ((1, 4, 5, 6), (1, 4, 5, 6)), [Q, Q, "ADD", DQ]),
    Case("add_broadcast_channel", f(lambda m, x, y: x + y), ((1, 4, 5, 6), (1, 4, 1, 1)), [Q, Q, "ADD", DQ]),
    Case("add_broadcast_rank", f(lambda m, x, y: x + y), ((2, 3, 6), (6,)), [Q, Q, "RESHAPE", "ADD", DQ]),
    Case("mul", f(lambda m, x, y: x * y), ((2, 3, 7), (2, 3, 7)), [Q, Q, "MUL", DQ]),
    Case("mul_broadcast_channel", f(lambda m, x, y: x * y), ((1, 6, 4, 4), (1, 6, 1, 1)), [Q, Q, "MUL", DQ]),
    Case("add_scalar_lut", f(lambda m, x: x + 0.75), ((1, 3, 4, 4),), [Q, "LUT", DQ]),
    # a quantized constant operand becomes a constant tensor of the payload (it stayed on the CPU)
    Case("add_constant_operand", lambda: WithConstant((1, 6, 8)), ((1, 6, 8),), [Q, "ADD", DQ]),
    Case("add_constant_nhwc", f(lambda m, x: m[1](m[0](x)), conv(3, 4, 3), lambda: WithConstant((1, 4, 4, 4))),
         ((1, 3, 6, 6),), [Q, "CONV2D", "ADD", DQ]),
    Case("mul_constant_per_channel", lambda: WithConstant((1, 4, 1, 1), mul=True), ((1, 4, 5, 6),),
         [Q, "MUL", DQ]),
    Case("add_alpha", f(lambda m, x, y: torch.add(x, y, alpha=2)), ((1, 25), (1, 25)), [Q, Q, "ADD", DQ]),
    Case("add_alpha_broadcast", f(lambda m, x, y: torch.add(x, y, alpha=0.25)), ((2, 3, 6), (6,)),
         [Q, Q, "RESHAPE", "ADD", DQ]),
    Case("mul_scalar_lut", f(lambda m, x: x * -1.5), ((1, 3, 4, 4),), [Q, "LUT", DQ]),
    # a negative alpha subtracts: the second operand's multiplier is negative
    Case("add_negative_alpha", f(lambda m, x, y: torch.add(x, y, alpha=-0.5)), ((1, 3, 4, 5), (1, 3, 4, 5)),
         [Q, Q, "ADD", DQ]),
]

# sub: ADD with the second operand's multiplier negated; with a number, a LUT
SUB_CASES = [
    Case("sub", f(lambda m, x, y: x - y), ((1, 4, 5, 6), (1, 4, 5, 6)), [Q, Q, "ADD", DQ]),
    Case("sub_relu_fused", f(lambda m, x, y: F.relu(x - y)), ((1, 4, 5, 6), (1, 4, 5, 6)), [Q, Q, "ADD", DQ]),
    Case("sub_broadcast_first", f(lambda m, x, y: x - y), ((5,), (1, 5, 1, 5)), [Q, "RESHAPE", Q, "ADD", DQ]),
    Case("sub_broadcast_second", f(lambda m, x, y: x - y), ((4, 4, 2, 7), (2, 7)), [Q, Q, "RESHAPE", "ADD", DQ]),
    Case("sub_alpha", f(lambda m, x, y: torch.sub(x, y, alpha=2)), ((1, 25), (1, 25)), [Q, Q, "ADD", DQ]),
    Case("sub_constant_operand", f(lambda m, x: x - m[0].c, lambda: WithConstant((1, 6, 8))), ((1, 6, 8),),
         [Q, "ADD", DQ]),
    Case("sub_scalar_lut", f(lambda m, x: x - 0.75), ((1, 3, 4, 4),), [Q, "LUT", DQ]),
    Case("rsub_scalar_lut", f(lambda m, x: 1.5 - x), ((1, 3, 4, 4),), [Q, "LUT", DQ]),
    # Python ints are promoted to float32 by PyTorch; the quantizer's rewrite writes them as
    # that float, so they are numbers to the lowering too (quantizer/rewrites/scalars.py)
    Case("add_int_lut", f(lambda m, x: x + 1), ((1, 3, 4, 4),), [Q, "LUT", DQ]),
    Case("sub_int_lut", f(lambda m, x: x - 2), ((1, 3, 4, 4),), [Q, "LUT", DQ]),
    Case("rsub_int_lut", f(lambda m, x: 3 - x), ((1, 3, 4, 4),), [Q, "LUT", DQ]),
    Case("mul_int_lut", f(lambda m, x: x * 3), ((1, 3, 4, 4),), [Q, "LUT", DQ]),
    Case("div_int_lut", f(lambda m, x: x / x.shape[2]),
         ((1, 3, 4, 4),), [Q, "LUT", DQ]),
    Case("rsub_alpha_lut", f(lambda m, x: torch.rsub(x, 2.0, alpha=3)), ((2, 9),), [Q, "LUT", DQ]),
]

class ByPositive(nn.Module):
    """x divided by a learned positive constant per channel (a quantized constant divisor)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.rand(shape) + 0.25)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x / self.w


# division by a tensor that is never negative: DIV (linear attention's normaliser)
DIV_CASES = [
    Case("div_by_relu_plus_eps", f(lambda m, x, y: x / (F.relu(y) + 0.1)), ((1, 4, 5, 6), (1, 4, 5, 1)),
         [Q, "LUT", "LUT", Q, "DIV", DQ]),
    Case("div_by_sigmoid_same_shape", f(lambda m, x, y: x / torch.sigmoid(y)), ((2, 3, 7), (2, 3, 7)),
         [Q, "LUT", Q, "DIV", DQ]),
    Case("div_by_square_rank2", f(lambda m, x, y: x / (y * y + 0.5)), ((3, 10), (3, 1)),
         [Q, "MUL", "LUT", Q, "DIV", DQ]),
    # the relu folds into DIV's act_min (the output zero point)
    Case("div_relu_fused", f(lambda m, x, y: F.relu(x / (torch.sigmoid(y) + 0.2))), ((1, 2, 4, 4), (1, 2, 4, 4)),
         [Q, "LUT", "LUT", Q, "DIV", DQ]),
    Case("div_by_constant_per_channel", lambda: ByPositive((1, 4, 1, 1)), ((1, 4, 3, 5),), [Q, "DIV", DQ]),
]

# PReLU: one slope, or one per channel (dim 1, the payload's last physical dim)
PRELU_CASES = [
    Case("prelu_per_channel_4d", lambda: nn.PReLU(3), ((2, 3, 4, 5),), [Q, "PRELU", DQ], {"alpha_offset": 0}),
    Case("prelu_single_4d", nn.PReLU, ((2, 3, 4, 5),), [Q, "PRELU", DQ]),
    Case("prelu_custom_init_3d", lambda: nn.PReLU(init=0.1), ((3, 4, 5),), [Q, "PRELU", DQ]),
    # [N, C, L] is quantized straight into [N, L, C] and dequantized back: no TRANSPOSE
    Case("prelu_per_channel_3d", lambda: nn.PReLU(4), ((3, 4, 5),), [Q, "PRELU", DQ]),
    Case("prelu_per_channel_2d", lambda: nn.PReLU(10), ((2, 10),), [Q, "PRELU", DQ]),
    Case("prelu_1d", nn.PReLU, ((20,),), [Q, "PRELU", DQ]),
    # after a convolution the per-channel slopes read its NHWC result in place
    Case("conv_prelu", seq(conv(3, 8, 3, padding=1), lambda: nn.PReLU(8)), ((1, 3, 6, 6),),
         [Q, "CONV2D", "PRELU", DQ]),
    Case("linear_prelu", seq(lambda: nn.Linear(12, 6), lambda: nn.PReLU(6)), ((3, 12),),
         [Q, "FULLY_CONNECTED", "PRELU", DQ]),
]


def bilinear(**kw: Any) -> Callable[[], nn.Module]:
    return f(lambda m, x: F.interpolate(x, mode="bilinear", **kw))


BILINEAR_CASES = [
    Case("bilinear_x2", bilinear(scale_factor=2, align_corners=False), ((1, 3, 5, 6),), [Q, "UPSAMPLE_BILINEAR", DQ]),
    Case("bilinear_x2_corners", bilinear(scale_factor=2, align_corners=True), ((1, 3, 5, 6),),
         [Q, "UPSAMPLE_BILINEAR", DQ]),
    Case("bilinear_x3", bilinear(scale_factor=3, align_corners=False), ((2, 2, 4, 3),), [Q, "UPSAMPLE_BILINEAR", DQ]),
    Case("bilinear_scale_1_5", bilinear(scale_factor=1.5, align_corners=False), ((1, 2, 5, 7),),
         [Q, "UPSAMPLE_BILINEAR", DQ]),
    Case("bilinear_scales_2_1_5_corners", bilinear(scale_factor=(2.0, 1.5), align_corners=True), ((1, 2, 5, 6),),
         [Q, "UPSAMPLE_BILINEAR", DQ]),
    Case("bilinear_size", bilinear(size=(13, 7), align_corners=False), ((2, 3, 5, 6),), [Q, "UPSAMPLE_BILINEAR", DQ]),
    Case("bilinear_size_corners", bilinear(size=(20, 10), align_corners=True), ((1, 2, 5, 5),),
         [Q, "UPSAMPLE_BILINEAR", DQ]),
    Case("bilinear_down", bilinear(size=(3, 4), align_corners=False), ((1, 2, 8, 9),), [Q, "UPSAMPLE_BILINEAR", DQ]),
    Case("bilinear_same_size", bilinear(size=(5, 6), align_corners=False), ((1, 2, 5, 6),),
         [Q, "UPSAMPLE_BILINEAR", DQ]),
    # after a convolution it reads the NHWC result
    Case("conv_bilinear", f(lambda m, x: F.interpolate(m[0](x), scale_factor=2, mode="bilinear"), conv(3, 4, 1)),
         ((1, 3, 4, 4),), [Q, "CONV2D", "UPSAMPLE_BILINEAR", DQ]),
]


def tconv(*a: Any, **k: Any) -> Callable[[], nn.Module]:
    return lambda: nn.ConvTranspose2d(*a, **k)


TCONV = [Q, "TRANSPOSE_CONV2D", DQ]
TCONV_CASES = [
    Case("tconv_basic", tconv(3, 6, 3), ((2, 3, 8, 8),), TCONV, {"groups": 1, "out_pad_h": 0}),
    Case("tconv_k1", tconv(3, 6, 1), ((1, 3, 5, 5),), TCONV),
    Case("tconv_rect_k", tconv(3, 6, (3, 5)), ((1, 3, 6, 5),), TCONV),
    Case("tconv_s2_p1_op1", tconv(4, 5, 3, stride=2, padding=1, output_padding=1), ((1, 4, 6, 7),), TCONV,
         {"stride_h": 2, "pad_top": 1, "out_pad_h": 1, "out_pad_w": 1}),
    Case("tconv_stride_2_1_pad_1_2", tconv(3, 6, 3, stride=(2, 1), padding=(1, 2)), ((1, 3, 6, 6),), TCONV),
    Case("tconv_op_1_0", tconv(3, 6, 3, stride=2, output_padding=(1, 0)), ((1, 3, 5, 5),), TCONV,
         {"out_pad_h": 1, "out_pad_w": 0}),
    Case("tconv_dilated", tconv(3, 6, 3, dilation=(2, 1)), ((1, 3, 6, 6),), TCONV, {"dilation_h": 2}),
    Case("tconv_op_below_dilation", tconv(3, 4, 3, dilation=2, output_padding=1), ((1, 3, 5, 5),), TCONV),
    Case("tconv_groups3", tconv(6, 6, 3, groups=3, stride=2), ((1, 6, 5, 5),), TCONV, {"groups": 3}),
    Case("tconv_groups2_mult", tconv(4, 6, (3, 2), groups=2, stride=(2, 3), padding=(1, 0), output_padding=(1, 2)),
         ((1, 4, 5, 5),), TCONV, {"groups": 2}),
    Case("tconv_depthwise_nobias", tconv(8, 8, 3, groups=8, padding=1, bias=False), ((1, 8, 5, 5),), TCONV),
    Case("tconv_bn_relu_folded", seq(tconv(4, 6, 2, stride=2), lambda: nn.BatchNorm2d(6), nn.ReLU), ((1, 4, 4, 4),),
         TCONV),
    Case("conv_tconv_chain", seq(conv(3, 8, 3, stride=2, padding=1), nn.ReLU, tconv(8, 4, 4, stride=2, padding=1)),
         ((1, 3, 8, 8),), [Q, "CONV2D", "TRANSPOSE_CONV2D", DQ]),
    # conv_transpose1d: the 2-D one of the [N, C, 1, L] view
    Case("tconv1d", lambda: nn.ConvTranspose1d(3, 5, 4, stride=2, padding=1), ((2, 3, 9),),
         [Q, "RESHAPE", "TRANSPOSE_CONV2D", "RESHAPE", DQ], {"stride_h": 1, "stride_w": 2, "pad_top": 0,
                                                             "pad_left": 1}, "TRANSPOSE_CONV2D"),
    Case("tconv1d_groups_op_dilation", lambda: nn.ConvTranspose1d(4, 6, 3, stride=3, output_padding=2, groups=2,
                                                                  dilation=2),
         ((1, 4, 7),), [Q, "RESHAPE", "TRANSPOSE_CONV2D", "RESHAPE", DQ], {"out_pad_w": 2, "dilation_w": 2},
         "TRANSPOSE_CONV2D"),
    Case("conv1d_tconv1d_chain", seq(conv1d(3, 6, 3, stride=2), nn.ReLU, lambda: nn.ConvTranspose1d(6, 3, 3, stride=2)),
         ((1, 3, 17),), [Q, "RESHAPE", "CONV2D", "TRANSPOSE_CONV2D", "RESHAPE", DQ]),
]

POOL_CASES = [
    Case("maxpool_k2s2", lambda: nn.MaxPool2d(2), ((1, 3, 8, 8),), [Q, "MAX_POOL2D", DQ], {"kernel_h": 2}),
    Case("maxpool_k3s2p1", lambda: nn.MaxPool2d(3, 2, 1), ((1, 3, 9, 9),), [Q, "MAX_POOL2D", DQ], {"pad_top": 1}),
    Case("maxpool_ceil", lambda: nn.MaxPool2d(3, 2, ceil_mode=True), ((1, 3, 8, 8),), [Q, "MAX_POOL2D", DQ]),
    # averages where a window sum can tie (an even divisor) run on AVG_POOL2D_FLOAT, PyTorch's
    # float32 arithmetic; odd divisors (no ties) on ESP-NN's AVG_POOL2D (tests/test_rounding.py)
    Case("avgpool_k2s2", lambda: nn.AvgPool2d(2), ((1, 3, 8, 8),), [Q, "AVG_POOL2D_FLOAT", DQ],
         {"torch_op": 0}),
    Case("avgpool_pad_include", lambda: nn.AvgPool2d(3, 1, 1, count_include_pad=True), ((1, 3, 7, 7),),
         [Q, "AVG_POOL2D", DQ], {"divisor_mode": 1}),
    Case("avgpool_pad_exclude", lambda: nn.AvgPool2d(3, 1, 1, count_include_pad=False), ((1, 3, 7, 7),),
         [Q, "AVG_POOL2D_FLOAT", DQ], {"divisor_mode": 0}),
    Case("avgpool_ceil_include", lambda: nn.AvgPool2d(3, 2, 1, ceil_mode=True), ((1, 3, 8, 8),),
         [Q, "AVG_POOL2D_FLOAT", DQ]),
    Case("adaptive_avgpool_1x1", lambda: nn.AdaptiveAvgPool2d(1), ((1, 5, 6, 7),), [Q, "AVG_POOL2D_FLOAT", DQ],
         {"torch_op": 2}),
    Case("adaptive_avgpool_1x1_odd", lambda: nn.AdaptiveAvgPool2d(1), ((1, 5, 7, 7),), [Q, "AVG_POOL2D", DQ]),
    Case("adaptive_avgpool_uniform", lambda: nn.AdaptiveAvgPool2d((5, 3)), ((2, 4, 15, 12),),
         [Q, "AVG_POOL2D_FLOAT", DQ],
         {"kernel_h": 3, "kernel_w": 4, "stride_h": 3, "stride_w": 4, "pad_top": 0, "divisor_mode": 0,
          "torch_op": 1}),
    Case("mean_hw_keepdim", f(lambda m, x: x.mean((2, 3), keepdim=True)), ((1, 5, 6, 7),),
         [Q, "AVG_POOL2D_FLOAT", DQ]),
    Case("mean_hw_flat", f(lambda m, x: x.mean((-1, -2))), ((2, 5, 4, 4),), [Q, "AVG_POOL2D_FLOAT", "RESHAPE", DQ]),
    # 1-D pooling: the 2-D pooling of the [N, C, 1, L] view (NHWC [N, 1, L, C] = [N, L, C])
    Case("maxpool1d_k2", lambda: nn.MaxPool1d(2), ((2, 3, 10),), [Q, "RESHAPE", "MAX_POOL2D", "RESHAPE", DQ],
         {"kernel_h": 1, "kernel_w": 2, "stride_h": 1, "stride_w": 2, "pad_top": 0, "pad_left": 0}, "MAX_POOL2D"),
    Case("maxpool1d_k3s2p1_ceil", lambda: nn.MaxPool1d(3, 2, 1, ceil_mode=True), ((1, 4, 10),),
         [Q, "RESHAPE", "MAX_POOL2D", "RESHAPE", DQ], {"kernel_w": 3, "stride_w": 2, "pad_left": 1, "pad_right": 1},
         "MAX_POOL2D"),
    Case("avgpool1d_k3s1", lambda: nn.AvgPool1d(3, 1), ((2, 5, 9),), [Q, "RESHAPE", "AVG_POOL2D", "RESHAPE", DQ],
         {"kernel_h": 1, "kernel_w": 3, "stride_w": 1}, "AVG_POOL2D"),
    Case("avgpool1d_pad_include", lambda: nn.AvgPool1d(3, 2, 1), ((1, 3, 11),),
         [Q, "RESHAPE", "AVG_POOL2D", "RESHAPE", DQ], {"pad_left": 1, "divisor_mode": 1}, "AVG_POOL2D"),
    Case("avgpool1d_pad_exclude_ceil", lambda: nn.AvgPool1d(4, 3, 2, ceil_mode=True, count_include_pad=False),
         ((1, 3, 12),), [Q, "RESHAPE", "AVG_POOL2D_FLOAT", "RESHAPE", DQ], {"pad_left": 2, "divisor_mode": 0},
         "AVG_POOL2D_FLOAT"),
    # after a conv1d the pooling reads its NHWC result directly
    Case("conv1d_maxpool1d", seq(conv1d(3, 8, 3, padding=1), nn.ReLU, lambda: nn.MaxPool1d(2)), ((1, 3, 16),),
         [Q, "RESHAPE", "CONV2D", "MAX_POOL2D", "RESHAPE", DQ]),
    # mean over the last dim(s): MEAN_HW over the [B, 1, R, 1] view (its own output observer)
    # (the RESHAPE is [N, C, L] -> the NHWC [N*C, L, 1, 1] of [N*C, 1, L, 1], in place)
    Case("mean_last_dim_3d", f(lambda m, x: x.mean(-1)), ((2, 3, 10),), MMID, MEAN_PARAMS, "MEAN_HW"),
    Case("mean_last_dim_3d_keepdim", f(lambda m, x: x.mean(2, keepdim=True)), ((2, 3, 10),), MMID),
    Case("mean_last_two_dims_3d", f(lambda m, x: x.mean((1, 2))), ((3, 4, 5),), MMID),
    Case("mean_last_two_dims_3d_keepdim", f(lambda m, x: x.mean((-2, -1), keepdim=True)), ((3, 4, 5),), MMID),
    Case("mean_empty_dim_list_3d", f(lambda m, x: torch.mean(x, dim=[])), ((2, 4, 5),), MMID),
    Case("mean_all_dims", f(lambda m, x: x.mean()), ((2, 4, 5),), MMID),  # aten.mean.default: a rank-0 result
    Case("mean_2d_features", f(lambda m, x: x.mean(1)), ((4, 16),), [Q, "RESHAPE", "MEAN_HW", "RESHAPE", DQ]),
    Case("mean_4d_last_dim", f(lambda m, x: x.mean(-1, keepdim=True)), ((1, 3, 4, 6),), MMID),
    # a conv1d's result is [N, L, C] in memory: the mean over L reads those bytes as NHWC
    # [N, L, 1, C] (an in-place RESHAPE, no TRANSPOSE)
    Case("mean_conv1d_output", f(lambda m, x: m[0](x).mean(-1), conv1d(3, 6, 3)), ((2, 3, 12),),
         [Q, "RESHAPE", "CONV2D", "RESHAPE", "MEAN_HW", "RESHAPE", DQ]),
    # means over any dims (issue 25): the averaged dims as one block of a physical order, its
    # bytes the NHWC [A, R, 1, C] of [A, C, R, 1], averaged over H; the input is quantized
    # straight into that order, a conv's NHWC result is read as it is
    Case("mean_tokens", f(lambda m, x: x.mean(1)), ((2, 5, 6),), MMID),
    Case("mean_tokens_keepdim", f(lambda m, x: x.mean(-2, keepdim=True)), ((2, 5, 6),), MMID),
    Case("mean_channels_4d", f(lambda m, x: x.mean(1)), ((1, 6, 3, 4),), MMID),
    Case("mean_channels_of_a_conv", f(lambda m, x: m[0](x).mean(1), conv(3, 6, 3)), ((1, 3, 5, 5),),
         [Q, "CONV2D", "RESHAPE", "MEAN_HW", "RESHAPE", DQ]),
    Case("mean_leading_dim", f(lambda m, x: x.mean(0)), ((3, 4, 5),), MMID),
    Case("mean_dims_0_2", f(lambda m, x: x.mean((0, 2))), ((3, 4, 5),), MMID),
    Case("mean_dims_1_3_keepdim", f(lambda m, x: x.mean((1, 3), keepdim=True)), ((2, 3, 4, 5),), MMID),
    Case("mean_dims_1_2_4d", f(lambda m, x: x.mean((1, 2))), ((2, 3, 4, 5),), MMID),
]

SOFTMAX_CASES = [
    Case("softmax_2d", lambda: nn.Softmax(-1), ((3, 10),), [Q, "SOFTMAX", DQ]),
    Case("softmax_4d_last", lambda: nn.Softmax(-1), ((1, 2, 3, 9),), [Q, "SOFTMAX", DQ]),
    Case("softmax_4d_channels", lambda: nn.Softmax(1), ((1, 6, 3, 4),), [Q, "SOFTMAX", DQ]),
]

LUT_CASES = [
    Case(name, make, ((1, 4, 5, 6),), [Q, "LUT", DQ])
    for name, make in [
        ("hardswish", nn.Hardswish), ("hardsigmoid", nn.Hardsigmoid), ("sigmoid", nn.Sigmoid),
        ("tanh", nn.Tanh), ("silu", nn.SiLU), ("gelu", nn.GELU), ("gelu_tanh", lambda: nn.GELU("tanh")),
        ("leaky_relu", lambda: nn.LeakyReLU(0.1)), ("relu", nn.ReLU), ("relu6", nn.ReLU6),
        ("hardtanh", lambda: nn.Hardtanh(-0.5, 0.5)),
        ("clamp_min", lambda: Fn(lambda m, x: torch.clamp(x, min=-0.25))),
    ]
]

MOVEMENT_CASES = [
    Case("flatten_nc11_free", f(lambda m, x: torch.flatten(F.adaptive_avg_pool2d(m[0](x), 1), 1), conv(3, 8, 3)),
         ((1, 3, 6, 6),), [Q, "CONV2D", "AVG_POOL2D_FLOAT", "RESHAPE", DQ]),
    Case("flatten_nchw_needs_transpose", f(lambda m, x: m[1](torch.flatten(m[0](x), 1)), conv(3, 4, 3),
                                           lambda: nn.Linear(4 * 4 * 4, 5)),
         ((1, 3, 6, 6),), [Q, "CONV2D", "TRANSPOSE", "RESHAPE", "FULLY_CONNECTED", DQ]),
    Case("permute_nhwc_free", f(lambda m, x: m[0](x).permute(0, 2, 3, 1), conv(3, 4, 1)), ((1, 3, 5, 6),),
         [Q, "CONV2D", DQ]),
    Case("reshape", f(lambda m, x: x.reshape(2, 6, 5)), ((1, 3, 4, 5),), [Q, "RESHAPE", DQ]),
    # identities keep the NHWC bytes between two convolutions: no TRANSPOSE/RESHAPE/TRANSPOSE
    Case("dropout_eval_free", f(lambda m, x: m[1](m[2](m[0](x))), conv(3, 8, 3), conv(8, 4, 1),
                                lambda: nn.Dropout(0.4)),
         ((1, 3, 6, 6),), [Q, "CONV2D", "CONV2D", DQ]),
    Case("clone_free", f(lambda m, x: m[1](m[0](x).clone()), conv(3, 8, 3), conv(8, 4, 1)),
         ((1, 3, 6, 6),), [Q, "CONV2D", "CONV2D", DQ]),
    Case("same_shape_view_free", f(lambda m, x: m[1](m[0](x).reshape(1, 8, 4, 4)), conv(3, 8, 3), conv(8, 4, 1)),
         ((1, 3, 6, 6),), [Q, "CONV2D", "CONV2D", DQ]),
    Case("clone_as_output", f(lambda m, x: m[0](x).clone(), conv(3, 8, 3)), ((1, 3, 6, 6),), [Q, "CONV2D", DQ]),
    Case("transpose_3d", f(lambda m, x: x.transpose(1, 2)), ((2, 3, 5),), [Q, DQ]),
    Case("slice_step", f(lambda m, x: x[:, :, 1:6:2]), ((1, 3, 7, 5),), [Q, "SLICE", DQ]),
    Case("select", f(lambda m, x: x[:, 1]), ((2, 3, 4),), [Q, "SLICE", "RESHAPE", DQ]),
    Case("cat_channels", f(lambda m, x: torch.cat([m[0](x), m[1](x)], 1), conv(3, 4, 1), conv(3, 5, 3, padding=1)),
         ((1, 3, 6, 6),), [Q, "CONV2D", "CONV2D", "CONCAT", DQ]),
    Case("cat_last_dim", f(lambda m, x, y: torch.cat([x, y], -1)), ((2, 3, 4), (2, 3, 2)), [Q, Q, "CONCAT", DQ]),
    # stack: CONCAT of the unit-dim views of the inputs (RESHAPEs planned in place)
    Case("stack_dim0", f(lambda m, x, y, z: torch.stack([x, y, z])), ((2, 3, 4),) * 3,
         [Q, "RESHAPE", Q, "RESHAPE", Q, "RESHAPE", "CONCAT", DQ], {"axis": 0}, "CONCAT"),
    Case("stack_last_dim", f(lambda m, x, y: torch.stack([x, y], -1)), ((2, 5), (2, 5)),
         [Q, "RESHAPE", Q, "RESHAPE", "CONCAT", DQ], {"axis": 2}, "CONCAT"),
    Case("stack_middle_2d", f(lambda m, x, y: torch.stack([x, y], 1)), ((3, 6), (3, 6)),
         [Q, "RESHAPE", Q, "RESHAPE", "CONCAT", DQ], {"axis": 1}, "CONCAT"),
    # two convs' results quantized each on its own: the stack requantises them to its output
    Case("stack_conv1d_outputs",
         f(lambda m, x: torch.stack([m[0](x), m[1](x)], 1), conv1d(3, 4, 1), conv1d(3, 4, 3, padding=1)),
         ((1, 3, 5),), [Q, "RESHAPE", "CONV2D", "CONV2D", "RESHAPE", "RESHAPE", "RESHAPE", "RESHAPE", "CONCAT", DQ]),
    # split / chunk: one SLICE per used piece, each piece a delegate output or an operand
    # (outputs listed in graph order: the harness compares the payload's outputs in order)
    Case("split_equal_dim1", f(lambda m, x: torch.split(x, 2, 1)), ((1, 4, 3, 5),),
         [Q, "SLICE", "SLICE", DQ, DQ]),
    Case("split_uneven_dim1", f(lambda m, x: torch.split(x, 3, 1)), ((2, 5, 4),),
         [Q, "SLICE", "SLICE", DQ, DQ]),
    Case("split_sizes_last_dim", f(lambda m, x: torch.split(x, [3, 1, 2], -1)), ((2, 3, 6),),
         [Q, "SLICE", "SLICE", "SLICE", DQ, DQ, DQ]),
    Case("chunk_last_dim", f(lambda m, x: torch.chunk(x, 3, -1)), ((1, 2, 3, 7),),
         [Q, "SLICE", "SLICE", "SLICE", DQ, DQ, DQ]),
    Case("split_one_piece_used", f(lambda m, x: torch.split(x, [1, 2, 3], 1)[1]), ((1, 6, 4),),
         [Q, "SLICE", DQ], {"start1": 1}, "SLICE"),
    Case("split_pieces_feed_conv_and_add",
         f(lambda m, x: (lambda a, b, c: (m[0](a), b + c))(*torch.split(x, 2, 1)), conv(2, 3, 1)),
         ((1, 6, 5, 5),), [Q, "SLICE", "SLICE", "SLICE", "CONV2D", "ADD", DQ, DQ]),
    # the pieces of a conv result are sliced in its NHWC bytes (no TRANSPOSE)
    Case("split_conv_output_channels",
         f(lambda m, x: (lambda a, b: (a, m[1](b)))(*torch.split(m[0](x), [5, 3], 1)),
           conv(3, 8, 3), conv(3, 4, 1)),
         ((1, 3, 6, 6),), [Q, "CONV2D", "SLICE", "SLICE", "CONV2D", DQ, DQ]),
    Case("chunk_conv_output_width",
         f(lambda m, x: (lambda a, b: (b, m[1](a)))(*torch.chunk(m[0](x), 2, -1)), conv(3, 4, 3), conv(4, 4, 1)),
         ((1, 3, 6, 8),), [Q, "CONV2D", "SLICE", "SLICE", "CONV2D", DQ, DQ]),
    Case("pad_value", f(lambda m, x: F.pad(x, (1, 2, 0, 1), value=0.5)), ((1, 2, 4, 5),), [Q, "PAD", DQ]),
    Case("upsample_x2", lambda: nn.Upsample(scale_factor=2, mode="nearest"), ((1, 3, 4, 5),),
         [Q, "UPSAMPLE_NEAREST", DQ]),
    Case("upsample_size", f(lambda m, x: F.interpolate(x, size=(7, 5), mode="nearest")), ((1, 2, 3, 4),),
         [Q, "UPSAMPLE_NEAREST", DQ]),
]

ALL = (CONV_CASES + CONV1D_CASES + LINEAR_CASES + ELEMENTWISE_CASES + SUB_CASES + POOL_CASES + SOFTMAX_CASES
       + LUT_CASES + PRELU_CASES + DIV_CASES + MOVEMENT_CASES + BILINEAR_CASES + TCONV_CASES)


def _lower_case(case: Case) -> Lowered:
    torch.manual_seed(0)
    m = case.make().eval()
    ex = tuple(torch.randn(s) for s in case.shapes)
    return lower(m, ex)


@pytest.mark.parametrize("case", ALL, ids=[c.name for c in ALL])
def test_single_op(case: Case) -> None:
    low = _lower_case(case)
    assert low.cpu() == [], [(d.op, d.reason) for d in low.cpu()]
    assert len(low.payloads) == 1
    assert low.opcodes() == case.ops
    if case.params:
        op = next(o for o in low.decoded().ops if o.opcode.name == (case.param_op or case.ops[1]))
        assert {k: op.params[k] for k in case.params} == case.params
    check_numerics(low)


def test_split_slices_start_at_each_piece_offset() -> None:
    # sizes [3, 1, 2] of the last dim: pieces start at 0, 3, 4 (the split's running sum)
    low = _lower_case(next(c for c in ALL if c.name == "split_sizes_last_dim"))
    slices = [o for o in low.decoded().ops if o.opcode == Opcode.SLICE]
    assert [o.params["start2"] for o in slices] == [0, 3, 4]
    assert all(o.params["start0"] == o.params["start1"] == 0 for o in slices)
    assert [low.decoded().tensors[o.output].dims for o in slices] == [(2, 3, 3), (2, 3, 1), (2, 3, 2)]


def _act_range(low: Lowered) -> tuple[int, int]:
    op = next(o for o in low.decoded().ops if o.opcode in (Opcode.CONV2D, Opcode.FULLY_CONNECTED))
    return op.params["act_min"], op.params["act_max"]


@pytest.mark.parametrize(
    ("name", "lo", "hi"),
    [("conv_relu6_fused", 0.0, 6.0), ("conv_hardtanh_kwargs_fused", -0.5, 1.5), ("conv_clamp_fused", -1.0, 2.0)],
)
def test_fused_clamp_sets_the_activation_range(name: str, lo: float, hi: float) -> None:
    case = next(c for c in ALL if c.name == name)
    low = _lower_case(case)
    s, z = low.output_qparams()[0]
    # independent: round-half-even(v / s) + z, clamped to int8
    want = tuple(int(np.clip(np.rint(np.float32(v) * np.float32(1.0 / s)) + z, -128, 127)) for v in (lo, hi))
    assert _act_range(low) == want
    assert not any(o.opcode == Opcode.LUT for o in low.decoded().ops)


def test_relu_fused_into_linear_has_zero_point_floor() -> None:
    low = _lower_case(next(c for c in ALL if c.name == "linear_relu_fused"))
    _, z = low.output_qparams()[0]
    assert _act_range(low) == (max(z, -128), 127)


def test_conv_bias_and_weights_layout() -> None:
    """The filter is OHWI and the bias is in accumulator units (input scale x weight scale)."""
    torch.manual_seed(0)
    m = nn.Conv2d(3, 4, (3, 2), padding=1).eval()
    low = lower(m, (torch.randn(1, 3, 6, 6),))
    p = low.decoded()
    op = next(o for o in p.ops if o.opcode == Opcode.CONV2D)
    filt = p.tensors[op.inputs[1]]
    assert filt.dims == (4, 3, 2, 3)
    raw = np.frombuffer(p.constants[filt.offset:filt.offset + filt.nbytes], dtype=np.int8).reshape(filt.dims)
    # the int8 weights PT2E produced, reordered OIHW -> OHWI
    w_q = next(
        n for n in low.converted.graph.nodes if n.op == "get_attr" and getattr(low.converted, n.target).dtype == torch.int8
    )
    w = getattr(low.converted, w_q.target).numpy()
    assert (raw == w.transpose(0, 2, 3, 1)).all()


def test_conv1d_filter_is_ohwi_with_height_1() -> None:
    """conv1d's [O, I, K] weights become the OHWI filter [O, 1, K, I] of an H = 1 CONV2D whose
    input and output are the [N, 1, L, C] (NHWC) views of [N, C, L]."""
    torch.manual_seed(0)
    m = nn.Conv1d(3, 4, 5, padding=1).eval()
    low = lower(m, (torch.randn(2, 3, 12),))
    p = low.decoded()
    op = next(o for o in p.ops if o.opcode == Opcode.CONV2D)
    filt = p.tensors[op.inputs[1]]
    assert filt.dims == (4, 1, 5, 3)
    assert p.tensors[op.inputs[0]].dims == (2, 1, 12, 3) and p.tensors[op.output].dims == (2, 1, 10, 4)
    raw = np.frombuffer(p.constants[filt.offset:filt.offset + filt.nbytes], dtype=np.int8).reshape(filt.dims)
    w_q = next(
        n for n in low.converted.graph.nodes if n.op == "get_attr" and getattr(low.converted, n.target).dtype == torch.int8
    )
    w = getattr(low.converted, w_q.target).numpy()
    assert (raw[:, 0] == w.transpose(0, 2, 1)).all()
    # the RESHAPEs around the conv are the [N, L, C] <-> [N, 1, L, C] views, planned in place
    q_op, in_view, _conv, out_view, _dq = p.ops
    assert (q_op.params["perm1"], q_op.params["perm2"]) == (2, 1)  # quantized straight into [N, L, C]
    for view in (in_view, out_view):
        assert p.tensors[view.inputs[0]].offset == p.tensors[view.output].offset


def _conv1d_big_bias() -> nn.Module:
    conv = nn.Conv1d(3, 8, 3)
    with torch.no_grad():
        conv.bias.zero_()
        conv.bias[5] = 5000.0  # in accumulator units (s_in * s_w ~ 1e-4) beyond 2**24
    return conv


@pytest.mark.parametrize(
    ("make", "shape", "reason"),
    [
        (_conv1d_big_bias, (1, 3, 16), "output channel 5"),
        (lambda: nn.Conv1d(1, 2, 3), (1, 1, 70000), "outside 1..65535"),
    ],
    ids=["bias_beyond_2_pow_24", "length_beyond_uint16"],
)
def test_conv1d_value_checks_keep_it_on_cpu(make: Callable[[], nn.Module], shape: tuple[int, ...],
                                            reason: str) -> None:
    torch.manual_seed(0)
    low = lower(make().eval(), (torch.randn(shape),))
    (d,) = [d for d in low.decisions if d.op == "aten.convolution.default"]
    assert not d.delegated and reason in d.reason, d.reason


def test_mean_with_its_own_output_scale_uses_mean_hw() -> None:
    """When the output is quantized differently from the input (edited graph), the global
    average is a MEAN_HW with a requantisation, still within 1 LSB of the float program."""
    from devkit.lowering_helpers import quantize_module

    m = Fn(lambda mods, x: x.mean((2, 3), keepdim=True)).eval()
    ex = (torch.randn(1, 6, 5, 7),)
    q = quantize_module(m, ex)
    means = [n for n in q.graph.nodes if n.op == "call_function" and "mean" in str(n.target)]
    (qnode,) = [u for u in means[0].users]
    qnode.args = (qnode.args[0], qnode.args[1] * 1.7, qnode.args[2] + 3, *qnode.args[3:])
    for u in list(qnode.users):
        u.args = (u.args[0], qnode.args[1], qnode.args[2], *u.args[3:])
    q.recompile()
    low = lower(m, ex, converted=q)
    assert low.opcodes() == [Q, "MEAN_HW", DQ]
    check_numerics(low)


@pytest.mark.parametrize(
    ("make", "shape", "op", "reason"),
    [
        (lambda: nn.MaxPool2d(2, dilation=2), (1, 3, 8, 8), "aten.max_pool2d_with_indices.default", "dilation"),
        (lambda: nn.AvgPool2d(2, divisor_override=3), (1, 3, 8, 8), "aten.avg_pool2d.default", "divisor_override"),
        (lambda: nn.MaxPool1d(2, dilation=2), (1, 3, 12), "aten.max_pool2d_with_indices.default",
         "part of aten.max_pool1d.default"),
        (lambda: nn.Softmax(2), (1, 3, 4, 5), "aten._softmax.default", "contiguous"),
        (lambda: nn.ELU(), (1, 3, 4, 5), "aten.elu.default", "no ESP-NN lowering"),
        (lambda: nn.AdaptiveAvgPool2d(3), (1, 3, 10, 10), "aten._adaptive_avg_pool2d.default",
         "output sizes that divide the input"),
        (f(lambda m, x: torch.sub(x, x.flip(-1), alpha=0)), (1, 3, 4, 5), "aten.sub.Tensor",
         "only a non-zero finite number"),
        (lambda: nn.ConvTranspose3d(2, 3, 3), (1, 2, 4, 4, 4), "aten.convolution.default",
         "the quantizer left it in float"),
        (lambda: nn.ConvTranspose2d(256, 1, 16), (1, 256, 2, 2), "aten.convolution.default",
         "accumulation allows 65535"),
        (f(lambda m, x: F.interpolate(x, scale_factor=0.5, mode="bilinear", antialias=True)), (1, 3, 8, 8),
         "aten._upsample_bilinear2d_aa.default", "no ESP-NN lowering"),
        (f(lambda m, x: x / x.flip(-1)), (1, 3, 4, 5), "aten.div.Tensor",
         "division by a tensor that may be negative (its int8 range starts at -"),
    ],
    ids=["maxpool_dilation", "avgpool_divisor_override", "maxpool1d_dilation", "softmax_dim2", "elu", "adaptive_avgpool_uneven",
         "sub_zero_alpha", "tconv3d", "tconv_reduction_too_long", "bilinear_antialias", "div_signed_divisor"],
)
def test_unsupported_variants_stay_on_cpu_with_reason(
    make: Callable[[], nn.Module], shape: tuple[int, ...], op: str, reason: str
) -> None:
    torch.manual_seed(0)
    low = lower(make().eval(), (torch.randn(shape),))
    cpu = {d.op: d.reason for d in low.cpu()}
    assert op in cpu, low.decisions
    assert reason in cpu[op]


def test_activations_and_reshapes_are_planned_in_place() -> None:
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.Hardswish(), nn.Conv2d(8, 4, 1), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(4, 3)).eval()
    low = lower(m, (torch.randn(1, 3, 8, 8),))
    p = low.decoded()
    for op in p.ops:
        if op.opcode in (Opcode.LUT, Opcode.RESHAPE):
            src, dst = p.tensors[op.inputs[0]], p.tensors[op.output]
            assert (src.offset, src.nbytes) == (dst.offset, dst.nbytes), op
    # peak: the first conv reads its 1x3x8x8 input (192 B) while writing 1x8x6x6 (288 B)
    assert p.arena_size == 192 + 288
    check_numerics(low)


def _requantize_input(q: Any, index: int, scale_factor: float, zp_shift: int) -> None:
    """Give the model input ``index`` other quantization parameters than the quantizer chose
    (its quantize node and the dequantize nodes reading it), as a differently calibrated
    producer would."""
    from executorch_espnn.graph.names import node_op

    ph = [n for n in q.graph.nodes if n.op == "placeholder"][index]
    (qnode,) = [u for u in ph.users if "quantize_per_tensor" in node_op(u)]
    qnode.args = (qnode.args[0], qnode.args[1] * scale_factor, qnode.args[2] + zp_shift, *qnode.args[3:])
    for u in list(qnode.users):
        u.args = (u.args[0], qnode.args[1], qnode.args[2], *u.args[3:])
    q.recompile()


def test_stack_requantises_inputs_with_other_quantization() -> None:
    """An input quantized differently from the stack's output passes through a LUT (exactly
    dequantize -> quantize) before the CONCAT; the others are copied as they are."""
    from devkit.lowering_helpers import quantize_module

    m = Fn(lambda mods, x, y: torch.stack([x, y], 1)).eval()
    ex = (torch.randn(2, 3, 4), torch.randn(2, 3, 4))
    q = quantize_module(m, ex)
    _requantize_input(q, 1, 1.6, -5)
    low = lower(m, ex, converted=q)
    assert low.cpu() == []
    assert low.opcodes() == [Q, "RESHAPE", Q, "RESHAPE", "LUT", "CONCAT", DQ]
    check_numerics(low)


def test_stack_beyond_rank_4_stays_on_cpu() -> None:
    torch.manual_seed(0)
    m = Fn(lambda mods, x, y: torch.stack([x, y], 2)).eval()
    low = lower(m, (torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)))
    assert low.delegated() == []
    assert any("rank 5" in d.reason for d in low.cpu()), low.decisions


def test_stack_of_more_than_16_tensors_stays_on_cpu() -> None:
    torch.manual_seed(0)
    m = Fn(lambda mods, x: torch.stack([x] * 17, 0)).eval()
    low = lower(m, (torch.randn(2, 3),))
    reasons = [d.reason for d in low.cpu()]
    assert any("at most 16" in r for r in reasons), low.decisions


def _mean_last_dim_with_output(scale_factor: float | None) -> Lowered:
    """x.mean(-1) of [2, 3, 10] with the output quantization edited: the input's own
    parameters (``None``) or the observed output scale times ``scale_factor``."""
    from devkit.lowering_helpers import quantize_module
    from executorch_espnn.graph.names import node_op

    m = Fn(lambda mods, x: x.mean(-1)).eval()
    ex = (torch.randn(2, 3, 10),)
    q = quantize_module(m, ex)
    (mean,) = [n for n in q.graph.nodes if n.op == "call_function" and "mean" in str(n.target)]
    dq_in = mean.args[0]
    (qnode,) = list(mean.users)
    if scale_factor is None:
        scale, zp = dq_in.args[1], dq_in.args[2]
    else:
        scale, zp = qnode.args[1] * scale_factor, qnode.args[2]
    assert "quantize_per_tensor" in node_op(qnode)
    qnode.args = (qnode.args[0], scale, zp, *qnode.args[3:])
    for u in list(qnode.users):
        u.args = (u.args[0], scale, zp, *u.args[3:])
    q.recompile()
    return lower(m, ex, converted=q)


def test_mean_last_dim_with_the_input_quantization_is_an_average_pool() -> None:
    low = _mean_last_dim_with_output(None)
    # ten values: a sum can tie, so PyTorch's float32 mean (tests/test_rounding.py)
    assert low.opcodes() == [Q, "RESHAPE", "AVG_POOL2D_FLOAT", "RESHAPE", DQ]
    op = next(o for o in low.decoded().ops if o.opcode == Opcode.AVG_POOL2D_FLOAT)
    assert (op.params["kernel_h"], op.params["kernel_w"], op.params["torch_op"]) == (10, 1, 2)
    check_numerics(low)


def test_mean_last_dim_multiplier_beyond_1_stays_on_cpu() -> None:
    low = _mean_last_dim_with_output(0.02)  # s_in / (s_out * 10) >= 1
    (d,) = [d for d in low.decisions if d.op == "aten.mean.dim"]
    assert not d.delegated and "multiplier" in d.reason and ">= 1" in d.reason, d.reason


def test_mean_of_more_than_65535_values_stays_on_cpu() -> None:
    torch.manual_seed(0)
    low = lower(Fn(lambda mods, x: x.mean(-1)).eval(), (torch.randn(2, 70000),))
    (d,) = [d for d in low.decisions if d.op == "aten.mean.dim"]
    assert not d.delegated and "65535" in d.reason, d.reason


def _split_graph(reader: str) -> tuple[Any, Any]:
    """dequantize → split_with_sizes_copy → getitem(0) → ``reader`` (FX, built by hand)."""
    from torch.fx import Graph

    from executorch_espnn.graph.constants import GraphContext

    g = Graph()
    x = g.placeholder("x")
    qd = torch.ops.quantized_decomposed
    dq = g.call_function(qd.dequantize_per_tensor.default, (x, 0.1, 0, -128, 127, torch.int8))
    split = g.call_function(torch.ops.aten.split_with_sizes_copy.default, (dq, [2, 3], 1))
    piece = g.call_function(operator.getitem, (split, 0))
    qargs = (0.1, 0, -128, 127, torch.int8)
    if reader == "relu":
        g.output(g.call_function(torch.ops.aten.relu.default, (piece,)))
    elif reader == "twice":
        g.output((g.call_function(qd.quantize_per_tensor.default, (piece, *qargs)),
                  g.call_function(qd.quantize_per_tensor.default, (piece, *qargs))))
    elif reader == "list":
        g.output((split, g.call_function(qd.quantize_per_tensor.default, (piece, *qargs))))
    else:
        g.output(piece)
    return split, GraphContext(None)


@pytest.mark.parametrize(("reader", "reason"), [
    ("relu", "piece getitem feeds aten.relu.default (relu_default) without int8 quantization"),
    ("output", "piece getitem feeds the graph output without int8 quantization"),
    ("twice", "piece getitem is quantized more than once"),
    ("list", "its list of pieces is read by the graph output, not by indexing"),
])
def test_split_pieces_must_each_be_quantized_once(reader: str, reason: str) -> None:
    from executorch_espnn.ops import build_registry
    from executorch_espnn.units import match_unit
    from executorch_espnn.unsupported import Unsupported

    split, ctx = _split_graph(reader)
    low = build_registry().get("aten.split_with_sizes_copy.default")
    assert low is not None
    with pytest.raises(Unsupported) as err:
        match_unit(split, low, ctx)
    assert err.value.reason == reason


# ------------------------------------------------------------- sub, PReLU, bilinear, transposed conv


def test_sub_is_add_with_the_second_multiplier_negated() -> None:
    torch.manual_seed(0)
    ex = (torch.randn(1, 4, 5, 6), torch.randn(1, 4, 5, 6))
    adds = [lower(Fn(fn).eval(), ex, calib=[ex]).decoded().ops[2] for fn in
            (lambda m, x, y: x + y, lambda m, x, y: x - y)]
    assert [op.opcode for op in adds] == [Opcode.ADD, Opcode.ADD]
    plus, minus = (op.params for op in adds)
    assert plus["a_mult"] > 0 and plus["b_mult"] > 0
    assert minus["a_mult"] > 0 > minus["b_mult"]
    # same operands, same shifts: only the sign of b's multiplier differs (the output
    # ranges, hence out_mult, differ between the two models)
    assert (minus["a_mult"], -minus["b_mult"], minus["b_shift"]) == (plus["a_mult"], plus["b_mult"], plus["b_shift"])


def test_prelu_slope_is_the_quantized_int8_one() -> None:
    torch.manual_seed(0)
    m = nn.PReLU(5).eval()
    with torch.no_grad():
        m.weight.copy_(torch.tensor([0.25, -0.1, 0.0, 0.6, 1.3]))  # a slope above 1 too
    ex = (torch.randn(2, 5, 4, 4) * 2,)
    low = lower(m, ex)
    check_numerics(low)
    (op,) = [o for o in low.decoded().ops if o.opcode == Opcode.PRELU]
    p = low.decoded()
    alpha = np.frombuffer(p.constants[p.tensors[op.inputs[1]].offset:][:5], dtype=np.int8)
    dq = next(n for n in low.converted.graph.nodes
              if n.op == "call_function" and "dequantize_per_tensor" in str(n.target)
              and isinstance(n.args[0], torch.fx.Node) and n.args[0].op == "get_attr")
    slope_q = getattr(low.converted, dq.args[0].target).numpy()
    assert alpha.tolist() == slope_q.tolist()  # the int8 slope of the convert_pt2e model
    assert dq.args[2] == 0 and abs(int(alpha.astype(int).__abs__().max())) == 127  # symmetric, full range
    assert op.params["alpha_offset"] == 0


def test_prelu_positive_side_multiplier_above_1_is_a_left_shift() -> None:
    """With slopes below 1 the output range is narrower than the input's: s_in / s_out > 1,
    which PRELU takes as TFLite does (mult in [2^30, 2^31), a positive shift)."""
    torch.manual_seed(0)
    low = lower(nn.PReLU(3).eval(), (torch.randn(2, 3, 4, 4) * 2,))
    check_numerics(low)
    (op,) = [o for o in low.decoded().ops if o.opcode == Opcode.PRELU]
    (s_in, _), (s_out, _) = low.input_qparams()[0], low.output_qparams()[0]
    assert s_in / s_out > 1
    assert op.params["pos_shift"] >= 1 and 1 << 30 <= op.params["pos_mult"] < 1 << 31


def test_bilinear_tables_follow_pytorch_scale_factor_rule() -> None:
    """With a scale factor, PyTorch maps output to input coordinates with 1/scale, not with
    in/out (here 5 * 1.5 = 7.5 -> 7 rows: 1/1.5 != 5/7); the tables come from its operator."""
    from devkit.payload_factory import bilinear_table
    from executorch_espnn.ops.resize import bilinear_tables

    class Up(nn.Module):
        def __init__(self, **kw: Any) -> None:
            super().__init__()
            self.kw = kw

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return F.interpolate(x, mode="bilinear", **self.kw)

    for kw, (h, w), (oh, ow) in [
        ({"scale_factor": 1.5, "align_corners": False}, (5, 5), (7, 7)),
        ({"size": (13, 7), "align_corners": False}, (5, 6), (13, 7)),
        ({"size": (9, 4), "align_corners": True}, (4, 8), (9, 4)),
    ]:
        ep = torch.export.export(Up(**kw), (torch.randn(1, 1, h, w),))
        (node,) = [n for n in ep.graph.nodes if n.op == "call_function" and "upsample" in str(n.target)]
        yi, yf, xi, xf = bilinear_tables(node, h, w, oh, ow)
        if "size" in kw:  # no scale factor: PyTorch's in/out rule, written out independently
            ac = bool(kw["align_corners"])
            for got, want in (((yi, yf), bilinear_table(h, oh, ac)), ((xi, xf), bilinear_table(w, ow, ac))):
                np.testing.assert_array_equal(got[0], want[0])
                assert np.abs(got[1].astype(int) - want[1].astype(int)).max() <= 1
        else:
            src = np.maximum((np.arange(oh) + 0.5) / 1.5 - 0.5, 0)
            np.testing.assert_array_equal(yi, np.floor(src).astype(np.int32))
            np.testing.assert_allclose(yf, np.rint((src - np.floor(src)) * 2048), atol=1)
            assert not np.array_equal(yi * 2048 + yf, np.rint(np.maximum((np.arange(oh) + 0.5) * 5 / 7 - 0.5, 0)
                                                              * 2048))


def test_transposed_conv_weight_is_quantized_on_axis_1_and_bias_per_output_channel() -> None:
    torch.manual_seed(0)
    m = nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2).eval()  # weight [4, 3, 3, 3]
    ex = (torch.randn(1, 4, 5, 5),)
    low = lower(m, ex)
    check_numerics(low)
    dqs = [n for n in low.converted.graph.nodes if n.op == "call_function" and "dequantize_per_channel" in str(n.target)]
    w_dq, b_dq = sorted(dqs, key=lambda n: str(n.args[-1]))  # int32 bias, int8 weight
    w_dq, b_dq = (w_dq, b_dq) if "int8" in str(w_dq.args[-1]) else (b_dq, w_dq)
    assert w_dq.args[3] == 1 and b_dq.args[3] == 0
    w_scale = getattr(low.converted, w_dq.args[1].target)
    b_scale = getattr(low.converted, b_dq.args[1].target)
    assert w_scale.shape == (3,) and b_scale.shape == (6,)  # one group's channels; every output channel
    s_in = low.input_qparams()[0][0]
    np.testing.assert_allclose(b_scale.numpy(), np.tile(w_scale.numpy(), 2) * s_in, rtol=1e-6)


def test_div_relu_folds_into_the_activation_range() -> None:
    low = _lower_case(next(c for c in ALL if c.name == "div_relu_fused"))
    _, z = low.output_qparams()[0]
    (op,) = [o for o in low.decoded().ops if o.opcode == Opcode.DIV]
    assert (op.params["act_min"], op.params["act_max"]) == (z, 127)


def test_div_by_an_exact_zero_saturates_as_pytorch_does() -> None:
    """``x / (relu(y) + 1e-3)``: the divisor's code is 0 wherever y <= 0 (1e-3 is below half its
    quantization step), so ``convert_pt2e``'s program and DIV divide by 0 there: PyTorch's ``±inf`` quantizes to the int8
    bounds and DIV's code-0 entry saturates the same way; everywhere else the two agree within
    1 LSB.  ``0 / 0`` is PyTorch's NaN, which quantize_per_tensor's cast turns into code 0:
    DIV gives code 0 there too (docs/payload-format.md, DIV)."""
    torch.manual_seed(0)
    low = lower(Fn(lambda m, x, y: x / (F.relu(y) + 1e-3)).eval(), (torch.randn(1, 3, 8, 5), torch.randn(1, 3, 8, 1)))
    assert low.cpu() == [] and "DIV" in low.opcodes()
    (s, z), = low.output_qparams()
    (sx, zx), _ = low.input_qparams()
    zero_div = nan = 0
    for seed in range(3):
        x, y = low.grid_inputs(seed)
        got = np.round(run_delegate(low.payloads[0], [x.numpy(), y.numpy()])[0] / s) + z
        want = np.round(low.converted(x, y).numpy().astype(np.float64) / s) + z
        d0 = np.broadcast_to((F.relu(y) == 0).numpy(), got.shape)
        n0 = np.round(x.numpy() / sx) + zx == zx
        ok = ~d0
        assert np.abs(got[ok] - want[ok]).max() <= 1
        sat = d0 & ~n0
        assert (got[sat] == np.where(x.numpy()[sat] > 0, 127, -128)).all()
        assert (got[sat] == want[sat]).all()
        assert (got[d0 & n0] == 0).all() and (want[d0 & n0] == 0).all()
        zero_div += int(sat.sum())
        nan += int((d0 & n0).sum())
    assert zero_div > 30, zero_div  # the case is exercised
