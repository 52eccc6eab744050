"""CONV2D and DEPTHWISE_CONV2D: shapes, geometry, reduction bound, weights and requantisation.

The operand, window and requantisation checks are shared with TRANSPOSE_CONV2D
(conv_transpose/check.py), which reads the same parameters and differs only in the output size.
"""

from __future__ import annotations

from typing import NamedTuple

from ...format import MAX_DIM, MAX_REDUCTION, Opcode
from ...model import TensorRec
from ..check_registry import OpCheck, check


class Window(NamedTuple):
    """A convolution window's stride, dilation and padding, each within its bounds."""

    stride_h: int
    stride_w: int
    dilation_h: int
    dilation_w: int
    pad_top: int
    pad_left: int
    pad_bottom: int
    pad_right: int


def window(c: OpCheck) -> Window:
    return Window(
        c.param("stride_h", 1, MAX_DIM), c.param("stride_w", 1, MAX_DIM),
        c.param("dilation_h", 1, MAX_DIM), c.param("dilation_w", 1, MAX_DIM),
        c.param("pad_top", 0, MAX_DIM), c.param("pad_left", 0, MAX_DIM),
        c.param("pad_bottom", 0, MAX_DIM), c.param("pad_right", 0, MAX_DIM),
    )


def conv_operands(c: OpCheck) -> tuple[TensorRec, TensorRec, TensorRec]:
    """The int8 NHWC input and output and the rank-4 constant filter."""
    x, o = c.int8_io(rank=4)
    f = c.const(1, "filter")
    c.rank(f, 4, "filter")
    return x, o, f


def check_output_and_requant(c: OpCheck, o: TensorRec, want: tuple[int, int, int, int]) -> None:
    """The output shape the geometry gives, then offsets, activation, weights and requantisation."""
    if o.dims != want:
        raise c.err("output", f"shape {o.dims}, expected {want}")
    cout = want[3]
    c.offsets("in_offset", out="out_offset")
    c.act()
    c.filter_bias(cout)
    c.requant_arrays(cout)


def _conv_out(size: int, pad_a: int, pad_b: int, k: int, stride: int, dil: int) -> int | None:
    eff = dil * (k - 1) + 1
    span = size + pad_a + pad_b - eff
    if span < 0:
        return None
    return span // stride + 1


def grouped_filter_reduction(c: OpCheck, fdims: tuple[int, ...], cin: int, cout: int) -> int:
    """``groups`` and the filter ``[Cout, KH, KW, Cin/groups]`` of a grouped convolution (plain
    or transposed); the reduction's length, within MAX_REDUCTION."""
    g = c.param("groups", 1, MAX_DIM)
    if cin % g or cout % g:
        raise c.err("groups", f"{g} does not divide in_ch {cin} and out_ch {cout}")
    if fdims[0] != cout or fdims[3] != cin // g:
        raise c.err("filter", f"shape {fdims}, expected ({cout}, KH, KW, {cin // g})")
    return bounded_reduction(c, fdims[1] * fdims[2] * (cin // g))


def bounded_reduction(c: OpCheck, reduction: int) -> int:
    if reduction > MAX_REDUCTION:
        raise c.err("filter", f"reduction of {reduction} terms exceeds {MAX_REDUCTION}")
    return reduction


@check(Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D)
def conv(c: OpCheck) -> None:
    depthwise = c.op.opcode == Opcode.DEPTHWISE_CONV2D
    x, o, f = conv_operands(c)
    n, h, w, cin = x.dims
    cout = o.dims[3]
    kh, kw = f.dims[1], f.dims[2]
    if depthwise:
        mult = c.param("ch_mult", 1, MAX_DIM)
        if f.dims[0] != 1 or f.dims[3] != cout:
            raise c.err("filter", f"shape {f.dims}, expected (1, KH, KW, {cout})")
        if cin * mult != cout:
            raise c.err("ch_mult", f"in_ch {cin} * ch_mult {mult} != out_ch {cout}")
        bounded_reduction(c, kh * kw)
    else:
        grouped_filter_reduction(c, f.dims, cin, cout)
    win = window(c)
    oh = _conv_out(h, win.pad_top, win.pad_bottom, kh, win.stride_h, win.dilation_h)
    ow = _conv_out(w, win.pad_left, win.pad_right, kw, win.stride_w, win.dilation_w)
    if oh is None or ow is None:
        raise c.err("filter", "kernel larger than the padded input")
    check_output_and_requant(c, o, (n, oh, ow, cout))
