"""Data movement: RESHAPE, TRANSPOSE, SLICE, CONCAT, PAD, UPSAMPLE_NEAREST (any dtype)."""

from __future__ import annotations

import numpy as np

from ...format import Opcode
from ..kernel_registry import OpContext, kernel


@kernel(Opcode.RESHAPE)
def reshape(ctx: OpContext) -> None:
    src = ctx.x(0).reshape(-1).view(np.uint8)
    dst = ctx.output.reshape(-1).view(np.uint8)
    if src.ctypes.data != dst.ctypes.data:  # in place when they share the arena bytes
        dst[...] = src


@kernel(Opcode.TRANSPOSE)
def transpose(ctx: OpContext) -> None:
    x = ctx.x(0)
    ctx.output[...] = np.transpose(x, ctx.perm(x.ndim))


@kernel(Opcode.SLICE)
def slice_(ctx: OpContext) -> None:
    out = ctx.output
    index = tuple(
        slice(ctx.param(f"start{i}"), ctx.param(f"start{i}") + (d - 1) * ctx.param(f"step{i}") + 1,
              ctx.param(f"step{i}"))
        for i, d in enumerate(out.shape)
    )
    out[...] = ctx.x(0)[index]


@kernel(Opcode.CONCAT)
def concat(ctx: OpContext) -> None:
    parts = [ctx.x(s) for s in range(len(ctx.inputs))]
    if ctx.output.ndim == 0:
        if len(parts) != 1:
            raise ctx.error("n_inputs", "a rank-0 CONCAT takes exactly one input")
        ctx.output[...] = parts[0]
        return
    ctx.output[...] = np.concatenate(parts, axis=ctx.param("axis"))


@kernel(Opcode.PAD)
def pad(ctx: OpContext) -> None:
    x = ctx.x(0)
    out = ctx.output
    before = [ctx.param(f"before{i}") for i in range(x.ndim)]
    # the value is the padded element in the tensor's dtype (validated to fit it)
    fill = np.array(ctx.param("value")).astype(out.dtype)
    inner = tuple(slice(b, b + d) for b, d in zip(before, x.shape, strict=True))
    result = np.full(out.shape, fill, dtype=out.dtype)
    result[inner] = x
    out[...] = result


@kernel(Opcode.UPSAMPLE_NEAREST)
def upsample_nearest(ctx: OpContext) -> None:
    x = ctx.x(0)
    y_map = ctx.x(1).astype(np.intp)
    x_map = ctx.x(2).astype(np.intp)
    ctx.output[...] = x[:, y_map][:, :, x_map]
