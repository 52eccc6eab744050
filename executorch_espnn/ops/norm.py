"""layer_norm over the last dim(s): LAYER_NORM, the engine's integer layer norm.

The float program computes ``quantize_out((x - mean) / sqrt(var + eps) * gamma + beta)`` on
the dequantized row; the engine computes the normalized row exactly in integers (the input
scale and zero point cancel, except in ``eps``) and applies ``gamma / s_out`` and
``beta / s_out`` as per-channel fixed-point constants (docs/payload-format.md, "LAYER_NORM").
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from ..graph.names import node_arg, static_shape
from ..graph.qdq import QParams, qdq_params
from ..layout import identity
from ..payload import DType, Opcode
from ..payload.format import (
    LAYER_NORM_EPS_HI_MAX,
    LAYER_NORM_FRAC_BITS,
    LAYER_NORM_GAMMA_SHIFT_MAX,
    LAYER_NORM_MAX_ROW,
)
from ..payload_builder import PayloadBuilder
from ..unsupported import Unsupported
from .base import OpLowering, Unit, register

INT32_MAX = 2**31 - 1


def layer_norm_constants(
    gamma: npt.NDArray[np.float64] | None,
    beta: npt.NDArray[np.float64] | None,
    eps: float,
    d: int,
    qin: QParams,
    qout: QParams,
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], dict[str, int]]:
    """(gamma, beta, params) of LAYER_NORM for a row of ``d`` values: gamma / s_out in
    fixed point with ``gamma_shift`` fractional bits (the most that fit int32), beta / s_out
    in Q16, and ``eps * d^2 * 2^16 / s_in^2`` split into two words."""
    g = np.ones(d) if gamma is None else gamma.astype(np.float64)
    bt = np.zeros(d) if beta is None else beta.astype(np.float64)
    if g.shape != (d,) or bt.shape != (d,):
        raise Unsupported(f"layer norm weight/bias of {g.shape}/{bt.shape} for rows of {d}")
    if not (np.isfinite(g).all() and np.isfinite(bt).all()):
        raise Unsupported("layer norm weight or bias is not finite")
    big_g = g * qout.inv_scale32
    big_b = bt * qout.inv_scale32
    top = float(np.abs(big_g).max())
    gs = LAYER_NORM_GAMMA_SHIFT_MAX
    while gs > 0 and round(top * 2.0**gs) > INT32_MAX:
        gs -= 1
    if round(top * 2.0**gs) > INT32_MAX:
        raise Unsupported(f"layer norm weight / output scale reaches {top:.3g}; the engine's int32 "
                          f"gamma holds less than 2^31")
    beta_q = np.round(big_b * 2.0**LAYER_NORM_FRAC_BITS)
    if np.abs(beta_q).max() > INT32_MAX:
        raise Unsupported(f"layer norm bias / output scale reaches {float(np.abs(big_b).max()):.3g}; "
                          f"the engine holds less than 2^15")
    if not (math.isfinite(eps) and eps >= 0):
        raise Unsupported(f"layer norm eps {eps}")
    eps_q = round(eps * d * d * 2.0**16 / (qin.scale32 * qin.scale32))
    if eps_q >> 32 > LAYER_NORM_EPS_HI_MAX:
        raise Unsupported(f"layer norm eps {eps:g} is too large for the input scale {qin.scale:g} "
                          "(eps / scale^2 beyond the engine's fixed point)")
    lo = eps_q & 0xFFFF_FFFF
    params = {
        "out_offset": qout.zero_point,
        "gamma_shift": gs,
        "eps_hi": eps_q >> 32,
        "eps_lo": lo - (1 << 32) if lo >= 1 << 31 else lo,
    }
    return np.round(big_g * 2.0**gs).astype(np.int32), beta_q.astype(np.int32), params


@register
class LayerNorm(OpLowering):
    targets = ("aten.layer_norm.default",)
    # to_edge would decompose it into native_layer_norm (a tuple) or mean/var/rsqrt
    preserve = ("aten.layer_norm.default",)

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        node = unit.anchor
        x = b.operand(unit.inputs[0])
        assert x.qp is not None
        normalized = [int(v) for v in node_arg(node, 1, "normalized_shape")]
        k = len(normalized)
        if not 1 <= k <= x.rank or tuple(x.shape[x.rank - k:]) != tuple(normalized):
            raise Unsupported(f"layer norm over {normalized} of a {x.shape} tensor")
        d = math.prod(normalized)
        if d > LAYER_NORM_MAX_ROW:
            raise Unsupported(f"layer norm over {d} values; the engine normalizes rows of at most "
                              f"{LAYER_NORM_MAX_ROW}")
        what = "the layer norm weight"
        gamma = b.ctx.bias(node_arg(node, 2, "weight", None), what)
        beta = b.ctx.bias(node_arg(node, 3, "bias", None), "the layer norm bias")
        eps = float(node_arg(node, 4, "eps", 1e-5))
        qout = qdq_params(unit.output)
        g, bt, params = layer_norm_constants(gamma, beta, eps, d, x.qp, qout)
        rows = (*x.shape[:x.rank - k], d)
        src = b.realize(b.reshaped(x, rows), identity(len(rows)))
        if static_shape(unit.output) != x.shape:
            raise Unsupported("unexpected output shape")
        if rows == x.shape:
            _, out = b.define(unit.output, identity(x.rank))
            b.emit(Opcode.LAYER_NORM, [src, b.constant(g), b.constant(bt)], out, params)
            return
        tmp = b.arena(rows, DType.INT8, qout)
        b.emit(Opcode.LAYER_NORM, [src, b.constant(g), b.constant(bt)], tmp, params)
        _, out = b.define(unit.output, identity(x.rank))
        b.emit(Opcode.RESHAPE, [tmp], out)
