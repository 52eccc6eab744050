"""TRANSPOSE_CONV2D: shapes, geometry (output size from stride, padding, dilation and output
padding), reduction bound, weights and requantisation (the checks shared with CONV2D in
conv/check.py)."""

from __future__ import annotations

from ...format import Opcode
from ..check_registry import OpCheck, check
from ..conv.check import check_output_and_requant, conv_operands, grouped_filter_reduction, window


def transposed_out(size: int, k: int, stride: int, dil: int, pad_a: int, pad_b: int, out_pad: int) -> int:
    """PyTorch's output size of a transposed convolution (may be < 1 for bad parameters)."""
    return (size - 1) * stride - pad_a - pad_b + dil * (k - 1) + out_pad + 1


@check(Opcode.TRANSPOSE_CONV2D)
def transpose_conv2d(c: OpCheck) -> None:
    x, o, f = conv_operands(c)
    n, h, w, cin = x.dims
    cout = o.dims[3]
    kh, kw = f.dims[1], f.dims[2]
    grouped_filter_reduction(c, f.dims, cin, cout)
    win = window(c)
    # PyTorch's rule: output padding below the stride or the dilation
    oph = c.param("out_pad_h", 0, max(win.stride_h, win.dilation_h) - 1)
    opw = c.param("out_pad_w", 0, max(win.stride_w, win.dilation_w) - 1)
    oh = transposed_out(h, kh, win.stride_h, win.dilation_h, win.pad_top, win.pad_bottom, oph)
    ow = transposed_out(w, kw, win.stride_w, win.dilation_w, win.pad_left, win.pad_right, opw)
    check_output_and_requant(c, o, (n, oh, ow, cout))
