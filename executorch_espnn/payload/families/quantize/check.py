"""QUANTIZE and DEQUANTIZE: float32 <-> int8 with a permutation."""

from __future__ import annotations

from ...format import DType, Opcode
from ..check_registry import OpCheck, check


@check(Opcode.QUANTIZE)
def quantize(c: OpCheck) -> None:
    c.permuted(DType.FLOAT32, DType.INT8)


@check(Opcode.DEQUANTIZE)
def dequantize(c: OpCheck) -> None:
    c.permuted(DType.INT8, DType.FLOAT32)
