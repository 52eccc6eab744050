"""Helpers shared by the reference kernels."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ...quant_math import I64, requant

I8 = npt.NDArray[np.int8]


def as_i64(a: npt.NDArray[np.generic]) -> I64:
    return np.asarray(a).astype(np.int64)


def clamp_to_int8(v: I64, lo: int, hi: int) -> I8:
    """``min(max(v, lo), hi)`` stored as int8 (lo/hi lie in -128..127)."""
    return np.clip(v, lo, hi).astype(np.int8)


def requant_epilogue(
    acc: I64,
    bias: I64 | None,
    mult: I64,
    shift: I64,
    out_offset: int,
    act_min: int,
    act_max: int,
) -> I8:
    """ESP-NN's per-channel epilogue over the last axis: bias, requantise, offset, clamp."""
    if bias is not None:
        acc = acc + bias
    return clamp_to_int8(requant(acc, mult, shift) + out_offset, act_min, act_max)


def trunc_div(num: I64, den: I64 | int) -> I64:
    """C's truncating integer division (``den`` > 0)."""
    q: I64 = np.sign(num) * (np.abs(num) // np.asarray(den, dtype=np.int64))
    return q
