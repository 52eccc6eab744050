"""MAX_POOL2D and AVG_POOL2D: window, padding (at most half the kernel), divisor mode, equal
quantization; AVG_POOL2D_FLOAT: the same window rules, its dequant table and torch_op."""

from __future__ import annotations

from ...format import (
    AVG_DIVISOR_INCLUDE_PAD,
    AVG_DIVISOR_VALID,
    AVG_TORCH_MEAN,
    AVG_TORCH_POOL,
    DEQUANT_TABLE_SIZE,
    MAX_DIM,
    MAX_POOL_WINDOW,
    DType,
    Opcode,
)
from ...model import TensorRec
from ..check_registry import OpCheck, check


def _same_quant(c: OpCheck, a: TensorRec, b: TensorRec) -> None:
    if a.scale != b.scale or a.zero_point != b.zero_point:
        raise c.err("output", "input and output quantization must be equal")


@check(Opcode.MAX_POOL2D, Opcode.AVG_POOL2D, Opcode.AVG_POOL2D_FLOAT)
def pool(c: OpCheck) -> None:
    avg = c.op.opcode in (Opcode.AVG_POOL2D, Opcode.AVG_POOL2D_FLOAT)
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
    if c.op.opcode == Opcode.AVG_POOL2D_FLOAT:
        _float_pool(c, x, o)
    else:
        _same_quant(c, x, o)


def _float_pool(c: OpCheck, x: TensorRec, o: TensorRec) -> None:
    """The dequant table, torch_op and what adaptive_avg_pool2d and mean need of the window
    (input and output may be quantized differently: the op dequantizes and quantizes)."""
    t = c.const(1, "dequant")
    c.dtype(t, DType.FLOAT32, "dequant")
    c.rank(t, 1, "dequant")
    if t.dims != (DEQUANT_TABLE_SIZE,):
        raise c.err("dequant", f"shape {t.dims}, expected ({DEQUANT_TABLE_SIZE},)")
    op = c.param("torch_op", AVG_TORCH_POOL, AVG_TORCH_MEAN)
    p = c.op.params
    if op != AVG_TORCH_POOL:
        for name in ("pad_top", "pad_left", "pad_bottom", "pad_right"):
            if p[name]:
                raise c.err(name, "adaptive_avg_pool2d and mean have no padding")
        if p["divisor_mode"] != AVG_DIVISOR_VALID:
            raise c.err("divisor_mode", "adaptive_avg_pool2d and mean divide by the whole window")
    if op == AVG_TORCH_MEAN:
        h, w = x.dims[1], x.dims[2]
        if p["kernel_h"] != h or p["kernel_w"] != w:
            name = "kernel_h" if p["kernel_h"] != h else "kernel_w"
            raise c.err(name, f"mean averages the whole {h}x{w} input in one window")
        if o.dims[1:3] != (1, 1):
            raise c.err("output", f"mean gives one value per channel, not {o.dims[1]}x{o.dims[2]}")
    if not o.scale > 0:
        raise c.err("scale", "the output needs a positive scale")
