"""CONV2D and DEPTHWISE_CONV2D: shapes, geometry, reduction bound, weights and requantisation."""

from __future__ import annotations

from ...format import MAX_DIM, MAX_REDUCTION, Opcode
from ..check_registry import OpCheck, check


def _conv_out(size: int, pad_a: int, pad_b: int, k: int, stride: int, dil: int) -> int | None:
    eff = dil * (k - 1) + 1
    span = size + pad_a + pad_b - eff
    if span < 0:
        return None
    return span // stride + 1


def _check_conv_geometry(c: OpCheck, n: int, h: int, w: int, kh: int, kw: int) -> tuple[int, int]:
    sh = c.param("stride_h", 1, MAX_DIM)
    sw = c.param("stride_w", 1, MAX_DIM)
    dh = c.param("dilation_h", 1, MAX_DIM)
    dw = c.param("dilation_w", 1, MAX_DIM)
    pt = c.param("pad_top", 0, MAX_DIM)
    pl = c.param("pad_left", 0, MAX_DIM)
    pb = c.param("pad_bottom", 0, MAX_DIM)
    pr = c.param("pad_right", 0, MAX_DIM)
    oh = _conv_out(h, pt, pb, kh, sh, dh)
    ow = _conv_out(w, pl, pr, kw, sw, dw)
    if oh is None or ow is None:
        raise c.err("filter", "kernel larger than the padded input")
    return oh, ow


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
    x, o = c.int8_io(rank=4)
    f = c.const(1, "filter")
    c.rank(f, 4, "filter")
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
    oh, ow = _check_conv_geometry(c, n, h, w, kh, kw)
    if o.dims != (n, oh, ow, cout):
        raise c.err("output", f"shape {o.dims}, expected {(n, oh, ow, cout)}")
    c.offsets("in_offset", out="out_offset")
    c.act()
    c.filter_bias(cout)
    c.requant_arrays(cout)
