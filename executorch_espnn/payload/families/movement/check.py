"""Data movement: RESHAPE, TRANSPOSE, SLICE, CONCAT, PAD, UPSAMPLE_NEAREST."""

from __future__ import annotations

from ...format import MAX_OP_INPUTS, DType, Opcode
from ..check_registry import OpCheck, check


@check(Opcode.RESHAPE)
def reshape(c: OpCheck) -> None:
    x, o = c.t(0), c.out()
    if x.dtype != o.dtype or x.nbytes != o.nbytes:
        raise c.err("output", "reshape must keep dtype and byte size")


@check(Opcode.TRANSPOSE)
def transpose(c: OpCheck) -> None:
    c.permuted(None, None)


@check(Opcode.SLICE)
def slice_(c: OpCheck) -> None:
    x, o = c.same_dtype_and_rank("slice")
    for i, start, step in c.dim_params("start", 0, "step", 1):
        if i >= x.rank:
            if start != 0 or step != 1:
                raise c.err(f"start{i}", "unused dims need start 0, step 1")
            continue
        if start + (o.dims[i] - 1) * step > x.dims[i] - 1:
            raise c.err(f"start{i}", f"slice reads past dim {i} of size {x.dims[i]}")


@check(Opcode.CONCAT)
def concat(c: OpCheck) -> None:
    if not 1 <= len(c.op.inputs) <= MAX_OP_INPUTS:
        raise c.err("n_inputs", f"{len(c.op.inputs)} outside [1, {MAX_OP_INPUTS}]")
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


@check(Opcode.PAD)
def pad(c: OpCheck) -> None:
    x, o = c.same_dtype_and_rank("pad")
    for i, b, a in c.dim_params("before", 0, "after", 0):
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


@check(Opcode.UPSAMPLE_NEAREST)
def upsample_nearest(c: OpCheck) -> None:
    x, o = c.int8_io(rank=4)
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
