"""LAYER_NORM: the engine's integer layer norm over the last dim (docs/payload-format.md)."""

from __future__ import annotations

import numpy as np

from ....quant_math import layer_norm_rsqrt, rdbp64
from ...format import LAYER_NORM_FRAC_BITS, Opcode
from ..kernel_common import as_i64, clamp_to_int8
from ..kernel_registry import OpContext, kernel

# X (the normalized value) has 24 fractional bits; R*n is rescaled by 2^(30 - t) to get it
X_FRAC_BITS = 24


@kernel(Opcode.LAYER_NORM)
def layer_norm(ctx: OpContext) -> None:
    x = as_i64(ctx.x(0))
    d = x.shape[-1]
    rows = x.reshape(-1, d)
    gamma = as_i64(ctx.x(1))
    beta = as_i64(ctx.x(2))
    gs = ctx.param("gamma_shift")
    eps_q = (ctx.param("eps_hi") << 32) | (ctx.param("eps_lo") & 0xFFFF_FFFF)
    out = np.empty(rows.shape, dtype=np.int8)
    for r, q in enumerate(rows):
        s = int(q.sum())
        v = d * int((q * q).sum()) - s * s
        w = (v << 16) + eps_q
        n = d * q - s
        if w == 0:
            big_x = np.zeros(d, dtype=np.int64)
        else:
            rinv, t = layer_norm_rsqrt(w)
            big_x = rdbp64(n * rinv, 30 - t)
        p = rdbp64(big_x * gamma, (32 - X_FRAC_BITS) + gs)
        out[r] = clamp_to_int8(rdbp64(p + beta, LAYER_NORM_FRAC_BITS) + ctx.param("out_offset"), -128, 127)
    ctx.output[...] = out.reshape(ctx.output.shape)
