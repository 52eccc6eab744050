"""The figures of the accuracy report, in plain numpy: SQNR, top-1, the int8 grid, LSB counts."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import numpy.typing as npt


def sqnr_db(reference: npt.NDArray[Any], test: npt.NDArray[Any]) -> float:
    """10·log10(Σ reference² / Σ (reference - test)²) over every element, in dB (float64 sums).

    ``inf`` when ``test`` equals ``reference`` exactly; ``-inf`` when the reference is all zero
    and the test is not (no signal to speak of: any error is total)."""
    ref = np.asarray(reference, dtype=np.float64).reshape(-1)
    err = ref - np.asarray(test, dtype=np.float64).reshape(-1)
    noise = float(np.dot(err, err))
    signal = float(np.dot(ref, ref))
    if noise == 0.0:
        return math.inf
    if signal == 0.0:
        return -math.inf
    return 10.0 * math.log10(signal / noise)


def top1(values: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """The arg-max of each sample's flattened values (axis 0 runs over samples)."""
    flat = np.asarray(values).reshape(len(values), -1)
    out: npt.NDArray[np.int64] = flat.argmax(axis=1).astype(np.int64)
    return out


def share_equal(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> float:
    return float(np.mean(np.asarray(a) == np.asarray(b))) if len(a) else 0.0


def on_grid(values: npt.NDArray[Any], scale: float, zero_point: int) -> npt.NDArray[np.int32]:
    """Float values on an int8 grid, as the self-test maps a dequantized output back to the
    int8 result: ``clamp(rint(double(y) / double(float32(scale))) + zp, -128, 127)``."""
    s = float(np.float32(scale))
    v = np.rint(np.asarray(values, dtype=np.float64) / s) + zero_point
    q: npt.NDArray[np.int32] = np.clip(v, -128, 127).astype(np.int32)
    return q


def lsb_histogram(test: npt.NDArray[Any], reference: npt.NDArray[Any]) -> dict[int, int]:
    """How many elements differ by each signed number of LSB (test - reference, int8 grids)."""
    d = np.asarray(test, dtype=np.int32).reshape(-1) - np.asarray(reference, dtype=np.int32).reshape(-1)
    return {int(k): int(v) for k, v in sorted(Counter(d.tolist()).items())}
