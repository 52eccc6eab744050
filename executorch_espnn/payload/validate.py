"""Semantic validation of a decoded payload: the same rules the C engine applies.

Structural checks (sizes, offsets, counts) live in the reader; this module checks what
each op needs of its tensors and parameters, including the values of per-channel
constants.  ``docs/payload-format.md`` lists every rule; the C engine mirrors them in
``engine/src/validate.c`` and ``engine/ops/*.c`` prepare functions.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import PayloadError
from .format import (
    ADD_LEFT_SHIFT_MAX,
    AVG_DIVISOR_INCLUDE_PAD,
    AVG_DIVISOR_VALID,
    MAX_ABS_BIAS,
    MAX_DIM,
    MAX_MEAN_COUNT,
    MAX_OP_INPUTS,
    MAX_POOL_WINDOW,
    MAX_REDUCTION,
    MULT_MAX,
    NO_TENSOR,
    OP_SPECS,
    SHIFT_MAX,
    SHIFT_MIN,
    SOFTMAX_MAX_ROW,
    SOFTMAX_OUT_SCALE,
    SOFTMAX_OUT_ZERO_POINT,
    SOFTMAX_SHIFT_MAX,
    DType,
    Opcode,
    Storage,
)
from .model import OpRec, Payload, TensorRec


def _fail(field: str, msg: str, op: int | None = None, tensor: int | None = None) -> PayloadError:
    return PayloadError(field, msg, op=op, tensor=tensor)


class _OpCheck:
    """Helper bound to one op: accessors that raise PayloadError naming the field."""

    def __init__(self, p: Payload, index: int, op: OpRec, consts: bytes) -> None:
        self.p = p
        self.i = index
        self.op = op
        self.consts = consts
        self.spec = OP_SPECS[op.opcode]

    def err(self, field: str, msg: str) -> PayloadError:
        return _fail(field, msg, op=self.i)

    def t(self, slot: int) -> TensorRec:
        tid = self.op.inputs[slot]
        assert tid is not None
        return self.p.tensors[tid]

    def out(self) -> TensorRec:
        return self.p.tensors[self.op.output]

    def param(self, name: str, lo: int, hi: int) -> int:
        v = self.op.params[name]
        if not lo <= v <= hi:
            raise self.err(name, f"value {v} outside [{lo}, {hi}]")
        return v

    def dtype(self, t: TensorRec, want: DType, field: str) -> None:
        if t.dtype != want:
            raise self.err(field, f"dtype {t.dtype.name}, expected {want.name}")

    def rank(self, t: TensorRec, want: int, field: str) -> None:
        if t.rank != want:
            raise self.err(field, f"rank {t.rank}, expected {want}")

    def const(self, slot: int, field: str) -> TensorRec:
        t = self.t(slot)
        if t.storage != Storage.CONST:
            raise self.err(field, "must be a constant tensor")
        return t

    def const_values(self, t: TensorRec) -> np.ndarray:
        raw = self.consts[t.offset : t.offset + t.nbytes]
        return np.frombuffer(raw, dtype=np.dtype(t.dtype.numpy_name).newbyteorder("<"))

    def act(self) -> None:
        lo = self.param("act_min", -128, 127)
        hi = self.param("act_max", -128, 127)
        if lo > hi:
            raise self.err("act_min", f"act_min {lo} > act_max {hi}")

    def offsets(self, *names: str, out: str | None = None) -> None:
        for n in names:
            self.param(n, -127, 128)
        if out:
            self.param(out, -128, 127)

    def requant_arrays(self, n: int) -> None:
        mult = self.const(3, "mult")
        shift = self.const(4, "shift")
        for t, name in ((mult, "mult"), (shift, "shift")):
            self.dtype(t, DType.INT32, name)
            if t.dims != (n,):
                raise self.err(name, f"shape {t.dims}, expected ({n},)")
        m = self.const_values(mult)
        s = self.const_values(shift)
        if (m < 0).any():
            raise self.err("mult", f"negative multiplier at channel {int(np.argmax(m < 0))}")
        bad = (s < SHIFT_MIN) | (s > SHIFT_MAX)
        if bad.any():
            c = int(np.argmax(bad))
            raise self.err("shift", f"channel {c} shift {int(s[c])} outside [{SHIFT_MIN}, {SHIFT_MAX}]")

    def filter_bias(self, n_out: int) -> None:
        f = self.const(1, "filter")
        self.dtype(f, DType.INT8, "filter")
        w = self.const_values(f)
        if (w == -128).any():
            raise self.err("filter", "weights must be symmetric int8 in [-127, 127]")
        if self.op.inputs[2] is not None:
            b = self.const(2, "bias")
            self.dtype(b, DType.INT32, "bias")
            if b.dims != (n_out,):
                raise self.err("bias", f"shape {b.dims}, expected ({n_out},)")
            bv = self.const_values(b).astype(np.int64)
            if (np.abs(bv) > MAX_ABS_BIAS).any():
                raise self.err("bias", f"|bias| exceeds {MAX_ABS_BIAS}")


def _conv_out(size: int, pad_a: int, pad_b: int, k: int, stride: int, dil: int) -> int | None:
    eff = dil * (k - 1) + 1
    span = size + pad_a + pad_b - eff
    if span < 0:
        return None
    return span // stride + 1


def _check_conv_geometry(c: _OpCheck, n: int, h: int, w: int, kh: int, kw: int) -> tuple[int, int]:
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


def _check_conv(c: _OpCheck, depthwise: bool) -> None:
    x, o = c.t(0), c.out()
    for t, name in ((x, "input"), (o, "output")):
        c.dtype(t, DType.INT8, name)
        c.rank(t, 4, name)
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
        reduction = kh * kw
    else:
        g = c.param("groups", 1, MAX_DIM)
        if cin % g or cout % g:
            raise c.err("groups", f"{g} does not divide in_ch {cin} and out_ch {cout}")
        if f.dims[0] != cout or f.dims[3] != cin // g:
            raise c.err("filter", f"shape {f.dims}, expected ({cout}, KH, KW, {cin // g})")
        reduction = kh * kw * (cin // g)
    if reduction > MAX_REDUCTION:
        raise c.err("filter", f"reduction of {reduction} terms exceeds {MAX_REDUCTION}")
    oh, ow = _check_conv_geometry(c, n, h, w, kh, kw)
    if o.dims != (n, oh, ow, cout):
        raise c.err("output", f"shape {o.dims}, expected {(n, oh, ow, cout)}")
    c.offsets("in_offset", out="out_offset")
    c.act()
    c.filter_bias(cout)
    c.requant_arrays(cout)


def _check_fc(c: _OpCheck) -> None:
    x, o = c.t(0), c.out()
    c.dtype(x, DType.INT8, "input")
    c.dtype(o, DType.INT8, "output")
    f = c.const(1, "filter")
    c.rank(f, 2, "filter")
    n_out, k = f.dims
    if x.rank < 1 or x.dims[-1] != k:
        raise c.err("input", f"last dim must equal filter row length {k}")
    rows = x.numel // k
    if o.rank < 1 or o.dims[-1] != n_out or o.numel != rows * n_out:
        raise c.err("output", f"shape {o.dims}, expected {rows} rows of {n_out}")
    if k > MAX_REDUCTION:
        raise c.err("filter", f"row length {k} exceeds {MAX_REDUCTION}")
    c.offsets("in_offset", out="out_offset")
    c.act()
    c.filter_bias(n_out)
    c.requant_arrays(n_out)


def _check_broadcast(c: _OpCheck) -> None:
    a, b, o = c.t(0), c.t(1), c.out()
    for t, name in ((a, "a"), (b, "b"), (o, "output")):
        c.dtype(t, DType.INT8, name)
        if t.rank != o.rank:
            raise c.err(name, f"rank {t.rank}, expected {o.rank}")
    for i, d in enumerate(o.dims):
        for t, name in ((a, "a"), (b, "b")):
            if t.dims[i] not in (1, d):
                raise c.err(name, f"dim {i} is {t.dims[i]}, cannot broadcast to {d}")


def _check_add(c: _OpCheck) -> None:
    _check_broadcast(c)
    c.offsets("a_offset", "b_offset", out="out_offset")
    for n in ("a_mult", "b_mult", "out_mult"):
        c.param(n, 0, MULT_MAX)
    for n in ("a_shift", "b_shift", "out_shift"):
        c.param(n, SHIFT_MIN, SHIFT_MAX)
    c.param("left_shift", 0, ADD_LEFT_SHIFT_MAX)
    c.act()


def _check_mul(c: _OpCheck) -> None:
    _check_broadcast(c)
    c.offsets("a_offset", "b_offset", out="out_offset")
    c.param("out_mult", 0, MULT_MAX)
    c.param("out_shift", SHIFT_MIN, SHIFT_MAX)
    c.act()


def _same_quant(c: _OpCheck, a: TensorRec, b: TensorRec) -> None:
    if a.scale != b.scale or a.zero_point != b.zero_point:
        raise c.err("output", "input and output quantization must be equal")


def _check_pool(c: _OpCheck, avg: bool) -> None:
    x, o = c.t(0), c.out()
    for t, name in ((x, "input"), (o, "output")):
        c.dtype(t, DType.INT8, name)
        c.rank(t, 4, name)
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


def _check_mean(c: _OpCheck) -> None:
    x, o = c.t(0), c.out()
    for t, name in ((x, "input"), (o, "output")):
        c.dtype(t, DType.INT8, name)
        c.rank(t, 4, name)
    n, h, w, ch = x.dims
    if o.dims != (n, 1, 1, ch):
        raise c.err("output", f"shape {o.dims}, expected {(n, 1, 1, ch)}")
    if h * w > MAX_MEAN_COUNT:
        raise c.err("input", f"H*W = {h * w} exceeds {MAX_MEAN_COUNT}")
    c.offsets("in_offset", out="out_offset")
    c.param("mult", 0, MULT_MAX)
    c.param("shift", SHIFT_MIN, SHIFT_MAX)


def _check_softmax(c: _OpCheck) -> None:
    x, o = c.t(0), c.out()
    c.dtype(x, DType.INT8, "input")
    c.dtype(o, DType.INT8, "output")
    if x.rank < 1 or x.dims != o.dims:
        raise c.err("output", f"shape {o.dims} must equal input {x.dims}")
    if x.dims[-1] > SOFTMAX_MAX_ROW:
        raise c.err("input", f"softmax row of {x.dims[-1]} exceeds {SOFTMAX_MAX_ROW} (int32 sum of exponentials)")
    c.param("mult", 0, MULT_MAX)
    shift = c.param("shift", 0, SOFTMAX_SHIFT_MAX)
    diff_min = c.param("diff_min", -(2**31), 0)
    # every difference the kernel rescales (diff >= diff_min, diff >= -255) times 2^shift
    # must fit in int32
    if min(-diff_min, 255) << shift > 2**31 - 1:
        raise c.err("diff_min", f"{diff_min} with shift {shift} overflows int32")
    if o.scale != np.float32(SOFTMAX_OUT_SCALE) or o.zero_point != SOFTMAX_OUT_ZERO_POINT:
        raise c.err("output", "softmax output must have scale 1/256 and zero point -128")


def _check_lut(c: _OpCheck) -> None:
    x, o = c.t(0), c.out()
    c.dtype(x, DType.INT8, "input")
    c.dtype(o, DType.INT8, "output")
    t = c.const(1, "table")
    c.dtype(t, DType.INT8, "table")
    if t.dims != (256,):
        raise c.err("table", f"shape {t.dims}, expected (256,)")
    if x.numel != o.numel:
        raise c.err("output", "element count differs from input")


def _perm(c: _OpCheck, rank: int) -> list[int]:
    perm = [c.op.params[f"perm{i}"] for i in range(4)]
    if sorted(perm[:rank]) != list(range(rank)) or perm[rank:] != list(range(rank, 4)):
        raise c.err("perm0", f"{perm} is not a permutation of rank {rank}")
    return perm


def _check_permuted(c: _OpCheck, din: DType | None, dout: DType | None) -> None:
    x, o = c.t(0), c.out()
    if din is not None:
        c.dtype(x, din, "input")
    if dout is not None:
        c.dtype(o, dout, "output")
    if din is None and x.dtype != o.dtype:
        raise c.err("output", "dtype differs from input")
    if x.rank != o.rank:
        raise c.err("output", f"rank {o.rank}, expected {x.rank}")
    perm = _perm(c, x.rank)
    want = tuple(x.dims[perm[i]] for i in range(x.rank))
    if o.dims != want:
        raise c.err("output", f"shape {o.dims}, expected {want}")
    q = o if dout == DType.INT8 else x if din == DType.INT8 else None
    if q is not None and not (math.isfinite(q.scale) and q.scale > 0):
        raise c.err("scale", "quantized side needs a positive finite scale")


def _check_reshape(c: _OpCheck) -> None:
    x, o = c.t(0), c.out()
    if x.dtype != o.dtype or x.nbytes != o.nbytes:
        raise c.err("output", "reshape must keep dtype and byte size")


def _check_slice(c: _OpCheck) -> None:
    x, o = c.t(0), c.out()
    if x.dtype != o.dtype or x.rank != o.rank:
        raise c.err("output", "slice must keep dtype and rank")
    for i in range(4):
        start = c.param(f"start{i}", 0, MAX_DIM)
        step = c.param(f"step{i}", 1, MAX_DIM)
        if i >= x.rank:
            if start != 0 or step != 1:
                raise c.err(f"start{i}", "unused dims need start 0, step 1")
            continue
        if start + (o.dims[i] - 1) * step > x.dims[i] - 1:
            raise c.err(f"start{i}", f"slice reads past dim {i} of size {x.dims[i]}")


def _check_concat(c: _OpCheck) -> None:
    o = c.out()
    axis = c.param("axis", 0, max(o.rank - 1, 0))
    if o.rank == 0 and len(c.op.inputs) != 1:
        raise c.err("n_inputs", "a rank-0 CONCAT takes exactly one input")
    total = 0
    for s, tid in enumerate(c.op.inputs):
        assert tid is not None
        t = c.p.tensors[tid]
        if t.dtype != o.dtype or t.rank != o.rank:
            raise c.err(f"inputs[{s}]", "dtype or rank differs from output")
        for i in range(o.rank):
            if i != axis and t.dims[i] != o.dims[i]:
                raise c.err(f"inputs[{s}]", f"dim {i} is {t.dims[i]}, expected {o.dims[i]}")
        total += t.dims[axis] if o.rank else 1
    if o.rank and total != o.dims[axis]:
        raise c.err("axis", f"inputs sum to {total} along axis {axis}, output has {o.dims[axis]}")


def _check_pad(c: _OpCheck) -> None:
    x, o = c.t(0), c.out()
    if x.dtype != o.dtype or x.rank != o.rank:
        raise c.err("output", "pad must keep dtype and rank")
    for i in range(4):
        b = c.param(f"before{i}", 0, MAX_DIM)
        a = c.param(f"after{i}", 0, MAX_DIM)
        if i >= x.rank:
            if a or b:
                raise c.err(f"before{i}", "unused dims cannot be padded")
        elif o.dims[i] != x.dims[i] + a + b:
            raise c.err("output", f"dim {i} is {o.dims[i]}, expected {x.dims[i] + a + b}")
    if x.dtype == DType.INT8:
        c.param("value", -128, 127)
    elif x.dtype == DType.UINT8:
        c.param("value", 0, 255)
    else:
        raise c.err("input", f"pad supports int8/uint8, got {x.dtype.name}")


def _check_upsample(c: _OpCheck) -> None:
    x, o = c.t(0), c.out()
    for t, name in ((x, "input"), (o, "output")):
        c.dtype(t, DType.INT8, name)
        c.rank(t, 4, name)
    n, h, w, ch = x.dims
    if o.dims[0] != n or o.dims[3] != ch:
        raise c.err("output", f"shape {o.dims} does not match input {x.dims}")
    for slot, name, size, lim in ((1, "y_map", o.dims[1], h), (2, "x_map", o.dims[2], w)):
        m = c.const(slot, name)
        c.dtype(m, DType.INT32, name)
        if m.dims != (size,):
            raise c.err(name, f"shape {m.dims}, expected ({size},)")
        v = c.const_values(m)
        if ((v < 0) | (v >= lim)).any():
            raise c.err(name, f"index outside [0, {lim - 1}]")


def check_op(p: Payload, index: int, op: OpRec) -> None:
    c = _OpCheck(p, index, op, p.constants)
    code = op.opcode
    if code == Opcode.QUANTIZE:
        _check_permuted(c, DType.FLOAT32, DType.INT8)
    elif code == Opcode.DEQUANTIZE:
        _check_permuted(c, DType.INT8, DType.FLOAT32)
    elif code == Opcode.CONV2D:
        _check_conv(c, depthwise=False)
    elif code == Opcode.DEPTHWISE_CONV2D:
        _check_conv(c, depthwise=True)
    elif code == Opcode.FULLY_CONNECTED:
        _check_fc(c)
    elif code == Opcode.ADD:
        _check_add(c)
    elif code == Opcode.MUL:
        _check_mul(c)
    elif code in (Opcode.MAX_POOL2D, Opcode.AVG_POOL2D):
        _check_pool(c, avg=code == Opcode.AVG_POOL2D)
    elif code == Opcode.MEAN_HW:
        _check_mean(c)
    elif code == Opcode.SOFTMAX:
        _check_softmax(c)
    elif code == Opcode.LUT:
        _check_lut(c)
    elif code == Opcode.RESHAPE:
        _check_reshape(c)
    elif code == Opcode.TRANSPOSE:
        _check_permuted(c, None, None)
    elif code == Opcode.SLICE:
        _check_slice(c)
    elif code == Opcode.CONCAT:
        if not 1 <= len(op.inputs) <= MAX_OP_INPUTS:
            raise c.err("n_inputs", f"{len(op.inputs)} outside [1, {MAX_OP_INPUTS}]")
        _check_concat(c)
    elif code == Opcode.PAD:
        _check_pad(c)
    elif code == Opcode.UPSAMPLE_NEAREST:
        _check_upsample(c)
    else:  # pragma: no cover - the reader rejects unknown opcodes first
        raise c.err("opcode", f"unknown opcode {int(code)}")


def _ranges_overlap(a0: int, a1: int, b0: int, b1: int) -> bool:
    return a0 < b1 and b0 < a1


def check_dataflow(p: Payload) -> None:
    """Def-before-use, single assignment, and no partial overlap of an op's arena operands."""
    written = [False] * len(p.tensors)
    spec_inplace = {code: s.in_place for code, s in OP_SPECS.items()}
    for i, op in enumerate(p.ops):
        out = p.tensors[op.output]
        if out.storage not in (Storage.ARENA, Storage.OUTPUT):
            raise _fail("output", "op output must be an arena or output tensor", op=i)
        if written[op.output]:
            raise _fail("output", f"tensor {op.output} is written twice", op=i)
        for s, tid in enumerate(op.inputs):
            if tid is None:
                continue
            t = p.tensors[tid]
            if t.storage in (Storage.ARENA, Storage.OUTPUT) and not written[tid]:
                raise _fail(f"inputs[{s}]", f"tensor {tid} is read before any op writes it", op=i)
            if tid == op.output:
                raise _fail(f"inputs[{s}]", "op reads its own output tensor", op=i)
        if out.storage == Storage.ARENA:
            o0, o1 = out.offset, out.offset + out.nbytes
            for s, tid in enumerate(op.inputs):
                if tid is None:
                    continue
                t = p.tensors[tid]
                if t.storage != Storage.ARENA:
                    continue
                if not _ranges_overlap(o0, o1, t.offset, t.offset + t.nbytes):
                    continue
                same = t.offset == out.offset and t.nbytes == out.nbytes
                ok_slot = s == 0 or (op.opcode in (Opcode.ADD, Opcode.MUL) and s == 1)
                if not ((same and spec_inplace[op.opcode] and ok_slot and t.dims == out.dims)
                        or (same and op.opcode == Opcode.RESHAPE)):
                    raise _fail(f"inputs[{s}]", "output overlaps an input it cannot update in place", op=i)
            if op.scratch_size and _ranges_overlap(
                o0, o1, op.scratch_offset, op.scratch_offset + op.scratch_size
            ):
                raise _fail("scratch_offset", "scratch overlaps the op output", op=i)
        if op.scratch_size:
            for s, tid in enumerate(op.inputs):
                if tid is None:
                    continue
                t = p.tensors[tid]
                if t.storage == Storage.ARENA and _ranges_overlap(
                    op.scratch_offset, op.scratch_offset + op.scratch_size, t.offset, t.offset + t.nbytes
                ):
                    raise _fail("scratch_offset", f"scratch overlaps inputs[{s}]", op=i)
        written[op.output] = True
    for k, tid in enumerate(p.outputs):
        if not written[tid]:
            raise _fail("outputs", f"output {k} (tensor {tid}) is never written")


def check_ops(p: Payload) -> None:
    for i, op in enumerate(p.ops):
        spec = OP_SPECS[op.opcode]
        for s, tid in enumerate(op.inputs):
            if tid is None and not (not spec.variadic_inputs and spec.inputs[s].endswith("?")):
                raise _fail(f"inputs[{s}]", "required input is absent", op=i)
            if tid is not None and tid == NO_TENSOR:  # pragma: no cover - decoded to None
                raise _fail(f"inputs[{s}]", "bad tensor id", op=i)
        check_op(p, i, op)
    check_dataflow(p)
