"""TRANSPOSE_CONV2D: shapes, geometry (output size from stride, padding, dilation and output
padding), reduction bound, weights and requantisation."""

from __future__ import annotations

from ...format import MAX_DIM, Opcode
from ..check_registry import OpCheck, check
from ..conv.check import grouped_filter_reduction


def transposed_out(size: int, k: int, stride: int, dil: int, pad_a: int, pad_b: int, out_pad: int) -> int:
    """PyTorch's output size of a transposed convolution (may be < 1 for bad parameters)."""
    return (size - 1) * stride - pad_a - pad_b + dil * (k - 1) + out_pad + 1


@check(Opcode.TRANSPOSE_CONV2D)
def transpose_conv2d(c: OpCheck) -> None:
    x, o = c.int8_io(rank=4)
    f = c.const(1, "filter")
    c.rank(f, 4, "filter")
    n, h, w, cin = x.dims
    cout = o.dims[3]
    kh, kw = f.dims[1], f.dims[2]
    grouped_filter_reduction(c, f.dims, cin, cout)
    sh = c.param("stride_h", 1, MAX_DIM)
    sw = c.param("stride_w", 1, MAX_DIM)
    dh = c.param("dilation_h", 1, MAX_DIM)
    dw = c.param("dilation_w", 1, MAX_DIM)
    pt = c.param("pad_top", 0, MAX_DIM)
    pl = c.param("pad_left", 0, MAX_DIM)
    pb = c.param("pad_bottom", 0, MAX_DIM)
    pr = c.param("pad_right", 0, MAX_DIM)
    # PyTorch's rule: output padding below the stride or the dilation
    oph = c.param("out_pad_h", 0, max(sh, dh) - 1)
    opw = c.param("out_pad_w", 0, max(sw, dw) - 1)
    oh = transposed_out(h, kh, sh, dh, pt, pb, oph)
    ow = transposed_out(w, kw, sw, dw, pl, pr, opw)
    if o.dims != (n, oh, ow, cout):
        raise c.err("output", f"shape {o.dims}, expected {(n, oh, ow, cout)}")
    c.offsets("in_offset", out="out_offset")
    c.act()
    c.filter_bias(cout)
    c.requant_arrays(cout)
