"""SOFTMAX over the last dim, bit-exact with ESP-NN's ``esp_nn_softmax_s8``.

That kernel is TFLite's int8 softmax built on gemmlowp fixed point: per row it rescales
``x - max`` to Q5.26 (``SRDHM(diff << shift, mult)``), evaluates exp on negative values
(a Taylor polynomial on [-1/4, 0) and one multiplication per set bit of the remaining
multiples of 1/4), accumulates ``exp >> 12`` (round to nearest) as Q12.19, normalises the
sum to [1, 2), inverts ``1 + x`` with three Newton-Raphson steps, and scales each exp by the
reciprocal into an output of scale 1/256 and zero point -128.  Everything below is that
algorithm on int64 numpy arrays holding int32 values, with C's int32 wrap-around made
explicit wherever the C code could wrap.
"""

from __future__ import annotations

import math

import numpy as np

from ....quant_math import I64, INT32_MAX, INT32_MIN, rdbp, srdhm
from ...format import Opcode
from ..kernel_registry import OpContext, kernel

ACCUM_BITS = 12  # integer bits of the sum of exponentials (Q12.19)
SOFTMAX_MAX_ROW = 4095  # sum of at most 4095 exps of at most 2**19 each fits in int32


def _q(value: float, frac_bits: int) -> int:
    """``value`` as a fixed-point constant with ``frac_bits`` fractional bits."""
    return round(value * (1 << frac_bits))


# exp(a) on [-1/4, 0): exp(-1/8) * (1 + t + t^2/2 + t^3/6 + t^4/24) with t = a + 1/8
_EXP_MINUS_ONE_EIGHTH = _q(math.exp(-1 / 8), 31)
_ONE_THIRD = _q(1 / 3, 31)
# exp(-2^k / 4) for the bits 24..30 of the remaining multiple of 1/4 (Q5.26 input)
_EXP_BIT_FACTORS = tuple((24 + k, _q(math.exp(-(2**k) / 4), 31)) for k in range(7))
# Newton-Raphson start for 1/d, d in [1/2, 1): 48/17 - 32/17 d, in Q2.29
_NR_48_17 = _q(48 / 17, 29)
_NR_NEG_32_17 = _q(-32 / 17, 29)
_NR_ONE_Q29 = 1 << 29


def _wrap32(v: I64) -> I64:
    """Two's-complement int32 wrap-around of int64 values."""
    return ((v + (1 << 31)) & 0xFFFF_FFFF) - (1 << 31)


def _sat_mul_pow2(v: I64, exponent: int) -> I64:
    """``v * 2**exponent`` saturated to int32 (gemmlowp's SaturatingRoundingMultiplyByPOT)."""
    thresh = (1 << (31 - exponent)) - 1
    r = _wrap32(v << exponent)
    r = np.where(v > thresh, INT32_MAX, r)
    return np.where(v < -thresh, INT32_MIN, r)


def exp_on_negative_values(a: I64) -> I64:
    """exp(a) for a Q5.26 value ``a`` <= 0, as Q0.31 (exp(0) gives INT32_MAX)."""
    quarter = 1 << 24
    a_mod_quarter_minus_quarter = (a & (quarter - 1)) - quarter
    remainder = a_mod_quarter_minus_quarter - a  # the multiples of 1/4 still to apply
    x = (a_mod_quarter_minus_quarter << 5) + (1 << 28)  # t + 1/8 rescaled to Q0.31
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rdbp(x4, 2)
    poly = rdbp(_wrap32(srdhm(_wrap32(x4_over_4 + x3), _ONE_THIRD) + x2), 1)
    result = _wrap32(_EXP_MINUS_ONE_EIGHTH + srdhm(_EXP_MINUS_ONE_EIGHTH, _wrap32(x + poly)))
    for bit, factor in _EXP_BIT_FACTORS:
        result = np.where(remainder & (1 << bit), srdhm(result, factor), result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x(a: I64) -> I64:
    """1 / (1 + a) for a Q0.31 value ``a`` in [0, 1), as Q0.31 (Newton-Raphson, 3 steps)."""
    s = a + INT32_MAX
    half_den = (s + 1) >> 1  # rounding half-sum; s >= 0 here
    x = _wrap32(_NR_48_17 + srdhm(half_den, _NR_NEG_32_17))
    for _ in range(3):
        err = _wrap32(_NR_ONE_Q29 - srdhm(half_den, x))
        x = _wrap32(x + _sat_mul_pow2(srdhm(x, err), 2))
    return _sat_mul_pow2(x, 1)


def _bit_length(v: I64) -> I64:
    """Bit length of non-negative int64 values below 2**32."""
    n = np.zeros_like(v)
    rest = v.copy()
    for step in (16, 8, 4, 2, 1):
        big = rest >= (1 << step)
        n = np.where(big, n + step, n)
        rest = np.where(big, rest >> step, rest)
    return n + (rest > 0)


def softmax_rows(x: I64, mult: int, shift: int, diff_min: int) -> I64:
    """int8 softmax of each row of ``x`` (int64 holding int8), output in -128..127."""
    diff = x - x.max(axis=1, keepdims=True)
    keep = diff >= diff_min
    # only kept differences are rescaled; the format bounds them so diff << shift fits int32
    rescaled = srdhm(np.where(keep, diff, 0) << shift, mult)
    exp_raw = exp_on_negative_values(rescaled)
    sum_of_exps = np.sum(np.where(keep, rdbp(exp_raw, ACCUM_BITS), 0), axis=1, keepdims=True)
    headroom_plus_one = 32 - _bit_length(sum_of_exps)  # clz32; the sum is >= 2**19
    shifted_sum_minus_one = ((sum_of_exps << headroom_plus_one) & 0xFFFF_FFFF) - (1 << 31)
    shifted_scale = one_over_one_plus_x(shifted_sum_minus_one)
    # 23..34: above 31 (a sum >= 2**28) the rounding shift yields 0, see the format spec
    exponent = ACCUM_BITS - headroom_plus_one + 31 - 8
    out = rdbp(srdhm(shifted_scale, exp_raw), exponent) - 128
    return np.where(keep, np.clip(out, -128, 127), -128)


@kernel(Opcode.SOFTMAX)
def softmax(ctx: OpContext) -> None:
    x = ctx.x(0)
    width = x.shape[-1]
    if width > SOFTMAX_MAX_ROW:
        raise ctx.error("input", f"softmax row of {width} exceeds {SOFTMAX_MAX_ROW} (int32 sum of exps)")
    rows = x.reshape(-1, width).astype(np.int64)
    out = softmax_rows(rows, ctx.param("mult"), ctx.param("shift"), ctx.param("diff_min"))
    ctx.output[...] = out.astype(np.int8).reshape(ctx.output.shape)
