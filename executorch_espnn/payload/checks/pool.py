"""MAX_POOL2D and AVG_POOL2D: window, padding (at most half the kernel), divisor mode, equal quantization."""

from __future__ import annotations

from ..format import (
    AVG_DIVISOR_INCLUDE_PAD,
    AVG_DIVISOR_VALID,
    MAX_DIM,
    MAX_POOL_WINDOW,
    Opcode,
)
from ..model import TensorRec
from .registry import OpCheck, check


def _same_quant(c: OpCheck, a: TensorRec, b: TensorRec) -> None:
    if a.scale != b.scale or a.zero_point != b.zero_point:
        raise c.err("output", "input and output quantization must be equal")


@check(Opcode.MAX_POOL2D, Opcode.AVG_POOL2D)
def pool(c: OpCheck) -> None:
    avg = c.op.opcode == Opcode.AVG_POOL2D
    x, o = c.int8_io(rank=4)
    n, h, w, ch = x.dims
    kh = c.param("kernel_h", 1, MAX_DIM)
    kw = c.param("kernel_w", 1, MAX_DIM)
    sh = c.param("stride_h", 1, MAX_DIM)
    sw = c.param("stride_w", 1, MAX_DIM)
    pt = c.param("pad_top", 0, kh // 2)
    pl = c.param("pad_left", 0, kw // 2)
    c.param("pad_bottom", 0, kh // 2)
    c.param("pad_right", 0, kw // 2)
    if kh * kw > MAX_POOL_WINDOW:
        raise c.err("kernel_h", f"window of {kh * kw} exceeds {MAX_POOL_WINDOW}")
    c.act()
    if avg:
        c.param("divisor_mode", AVG_DIVISOR_VALID, AVG_DIVISOR_INCLUDE_PAD)
    on, oh, ow, oc = o.dims
    if on != n or oc != ch:
        raise c.err("output", f"shape {o.dims} does not match input {x.dims}")
    # every window must start inside the input or its top/left padding
    if (oh - 1) * sh - pt > h - 1 or (ow - 1) * sw - pl > w - 1:
        raise c.err("output", f"output {oh}x{ow} has windows outside the input")
    _same_quant(c, x, o)
