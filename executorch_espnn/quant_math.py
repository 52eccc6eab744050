"""Fixed-point arithmetic shared by the lowering (which computes multipliers) and the
reference (which executes them): TFLite's requantisation, exactly as ESP-NN implements it.

All array functions take and return numpy int64 arrays holding int32 values, so that
intermediate products never overflow in numpy.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from .payload.format import DIV_SHIFT_MAX, DIV_TABLE_SIZE, MULT_MAX, SHIFT_MAX, SHIFT_MIN

I64 = npt.NDArray[np.int64]
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier: real ≈ mult · 2^(shift - 31), mult in [2^30, 2^31)."""
    if real == 0.0:
        return 0, 0
    if not math.isfinite(real) or real < 0:
        raise ValueError(f"multiplier must be finite and non-negative, got {real}")
    q, shift = math.frexp(real)
    q_fixed = round(q * (1 << 31))
    if q_fixed == 1 << 31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    if shift > 30:
        return INT32_MAX, 30
    return int(q_fixed), int(shift)


def multiplier_in_range(real: float) -> bool:
    """Whether ``real`` is representable with shift in [SHIFT_MIN, SHIFT_MAX] (i.e. < 1)."""
    _, shift = quantize_multiplier(real)
    return SHIFT_MIN <= shift <= SHIFT_MAX


def srdhm(a: I64 | int, b: I64 | int) -> I64:
    """SaturatingRoundingDoublingHighMul on int32 values held in int64 arrays."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    # a*b of two int32 fits in int64 except INT32_MIN**2 == 2**62, which also fits.
    p = a * b
    nudge = np.where(p >= 0, 1 << 30, 1 - (1 << 30))
    s = p + nudge
    # C's truncating division by 2**31
    q = np.where(s >= 0, s >> 31, -((-s) >> 31))
    return np.where(overflow, INT32_MAX, q).astype(np.int64)


def rdbp(x: I64 | int, exponent: I64 | int) -> I64:
    """RoundingDivideByPOT: round half away from zero, exponent in [0, 31]."""
    x = np.asarray(x, dtype=np.int64)
    e = np.asarray(exponent, dtype=np.int64)
    mask = (np.int64(1) << e) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> e) + (remainder > threshold)


def requant(x: I64 | int, mult: I64 | int, shift: I64 | int) -> I64:
    """ESP-NN's esp_nn_multiply_by_quantized_mult for shift <= 0."""
    shift = np.asarray(shift, dtype=np.int64)
    if (shift > 0).any():
        raise ValueError("positive shifts are not part of the payload format")
    return rdbp(srdhm(x, mult), -shift)


def requant_ls(x: I64 | int, mult: I64 | int, shift: I64 | int) -> I64:
    """TFLite's MultiplyByQuantizedMultiplier: a positive shift multiplies ``x`` by 2^shift
    before the doubling high multiply, a negative one is the rounding right shift (PRELU)."""
    shift = np.asarray(shift, dtype=np.int64)
    left = np.maximum(shift, 0)
    return rdbp(srdhm(np.asarray(x, dtype=np.int64) << left, mult), np.maximum(-shift, 0))


# multipliers from this up to 1 are held with shift 0, rounded once (ops/common.requant says why)
SINGLE_ROUNDING_MIN = 2.0**-11
# |n / d * k| >= 256 saturates int8 for every |n| >= 1: such a multiplier is held as the largest
DIV_SATURATE = 256.0


def div_multipliers(k: float, b_zero_point: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
    """DIV's table: for each int8 code ``c`` of the divisor (entry ``c + 128``), the
    requantisation ``(mult, shift)`` of ``k / (c - b_zero_point)``, where ``k`` is
    ``s_a / (s_b * s_out)``: the quotient of real values ``s_a (a - za) / (s_b (c - zb))`` in
    output units is then ``requant_ls(a - za, mult, shift)``, one rounding of the exact
    quotient up to the multiplier's 31 bits.  A code worth 0, and any multiplier of 256 or
    more, holds ``(±MULT_MAX, DIV_SHIFT_MAX)``: every non-zero numerator saturates, as PyTorch's
    ``x / 0 = ±inf`` quantizes to the int8 bounds (``0 / 0`` is DIV's ``b_zero_point`` rule)."""
    if not math.isfinite(k) or k <= 0:
        raise ValueError(f"division scale ratio must be finite and positive, got {k}")
    mult = np.zeros(DIV_TABLE_SIZE, dtype=np.int32)
    shift = np.zeros(DIV_TABLE_SIZE, dtype=np.int32)
    for i in range(DIV_TABLE_SIZE):
        d = i - 128 - b_zero_point
        r = abs(k / d) if d else math.inf
        sign = -1 if d < 0 else 1
        if r >= DIV_SATURATE:
            m, s = MULT_MAX, DIV_SHIFT_MAX
        elif SINGLE_ROUNDING_MIN <= r < 1.0:
            m, s = min(round(r * 2.0**31), MULT_MAX), 0
        else:
            m, s = quantize_multiplier(r)
        mult[i], shift[i] = sign * m, s
    return mult, shift


def add_params(s_a: float, s_b: float, s_out: float, left_shift: int = 20) -> dict[str, int]:
    """TFLite/ESP-NN int8 ADD parameters (offsets and activation range not included).

    A negative ``s_b`` subtracts the second operand: its multiplier is the negated multiplier
    of ``|s_b|`` (the shift is the same)."""
    twice_max = 2.0 * max(s_a, abs(s_b))
    a_mult, a_shift = quantize_multiplier(s_a / twice_max)
    b_mult, b_shift = quantize_multiplier(abs(s_b) / twice_max)
    if s_b < 0:
        b_mult = -b_mult
    o_mult, o_shift = quantize_multiplier(twice_max / ((1 << left_shift) * s_out))
    return {
        "a_mult": a_mult, "a_shift": a_shift, "b_mult": b_mult, "b_shift": b_shift,
        "left_shift": left_shift, "out_mult": o_mult, "out_shift": o_shift,
    }


SOFTMAX_SCALED_DIFF_INTEGER_BITS = 5


def softmax_params(input_scale: float, beta: float = 1.0) -> tuple[int, int, int]:
    """TFLite's PreprocessSoftmaxScaling + CalculateInputRadius: (mult, left_shift, diff_min)."""
    bits = SOFTMAX_SCALED_DIFF_INTEGER_BITS
    real = min(beta * input_scale * (1 << (31 - bits)), float((1 << 31) - 1))
    mult, shift = quantize_multiplier(real)
    if shift < 0:
        raise ValueError(f"softmax input scale {input_scale} is too small")
    max_rescaled = 1.0 * ((1 << bits) - 1) * (1 << (31 - bits)) / (1 << shift)
    diff_min = -math.floor(max_rescaled)
    return mult, shift, diff_min


def rdbp64(x: I64 | int, exponent: int) -> I64:
    """Round half away from zero of ``x / 2^exponent`` for int64 values, exponent in [0, 62]
    (LAYER_NORM's wide steps; ``rdbp`` is the same rounding on int32)."""
    x = np.asarray(x, dtype=np.int64)
    if exponent == 0:
        return x
    mask = np.int64((1 << exponent) - 1)
    threshold = (mask >> 1) + (x < 0)
    out: I64 = (x >> exponent) + ((x & mask) > threshold)
    return out


def layer_norm_rsqrt(w: int) -> tuple[int, int]:
    """LAYER_NORM's integer reciprocal square root of ``w`` (0 < w < 2^62): ``(r, t)`` with
    ``w * 4^t`` in [2^60, 2^62), ``s = isqrt(w * 4^t)`` in [2^30, 2^31) and
    ``r = floor(2^62 / s)``, so that ``1 / sqrt(w) ~= r * 2^(t - 62)``."""
    t = (62 - w.bit_length()) // 2
    s = math.isqrt(w << (2 * t))
    return (1 << 62) // s, t
