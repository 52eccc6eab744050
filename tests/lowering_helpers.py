"""Moved to devkit/lowering_helpers.py (benchmarks/ use it too, and no tool may import
``tests``). This re-export only keeps test files written against the old path working
until they import devkit.lowering_helpers; new code imports devkit's."""

from devkit.lowering_helpers import (
    Lowered,
    check_numerics,
    lower,
    lsb_errors,
    op_by_op,
    opcode_set,
    quantize_module,
)

__all__ = ["Lowered", "check_numerics", "lower", "lsb_errors", "op_by_op", "opcode_set", "quantize_module"]
