"""FULLY_CONNECTED: rows of the filter's length, weights and requantisation."""

from __future__ import annotations

from ...format import MAX_REDUCTION, Opcode
from ..check_registry import OpCheck, check


@check(Opcode.FULLY_CONNECTED)
def fully_connected(c: OpCheck) -> None:
    x, o = c.int8_io()
    f = c.const(1, "filter")
    c.rank(f, 2, "filter")
    n_out, k = f.dims
    if x.rank < 1 or x.dims[-1] != k:
        raise c.err("input", f"last dim must equal filter row length {k}")
    rows = x.numel // k
    if o.rank < 1 or o.dims[-1] != n_out or o.numel != rows * n_out:
        raise c.err("output", f"shape {o.dims}, expected {rows} rows of {n_out}")
    if k > MAX_REDUCTION:
        raise c.err("filter", f"row length {k} exceeds {MAX_REDUCTION}")
    c.offsets("in_offset", out="out_offset")
    c.act()
    c.filter_bias(n_out)
    c.requant_arrays(n_out)
