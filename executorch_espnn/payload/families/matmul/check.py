"""BATCH_MATMUL: a [..., M, K], b as [..., N, K] (the second operand transposed), output
[..., M, N]; each operand's batch is the output's or 1."""

from __future__ import annotations

from ...format import MAX_MATMUL_DEPTH, MULT_MAX, SHIFT_MAX, SHIFT_MIN, DType, Opcode
from ..check_registry import OpCheck, check


@check(Opcode.BATCH_MATMUL)
def batch_matmul(c: OpCheck) -> None:
    a, b, o = c.t(0), c.t(1), c.out()
    for t, name in ((a, "a"), (b, "b"), (o, "output")):
        c.dtype(t, DType.INT8, name)
        if not 2 <= t.rank <= 4:
            raise c.err(name, f"rank {t.rank}, expected 2 to 4")
    m, k = a.dims[a.rank - 2], a.dims[a.rank - 1]
    n = b.dims[b.rank - 2]
    if b.dims[b.rank - 1] != k:
        raise c.err("b", f"last dim {b.dims[b.rank - 1]}, expected the {k} of a's last dim")
    if (o.dims[o.rank - 2], o.dims[o.rank - 1]) != (m, n):
        raise c.err("output", f"last dims {o.dims[o.rank - 2:o.rank]}, expected ({m}, {n})")
    if k > MAX_MATMUL_DEPTH:
        raise c.err("a", f"reduction of {k} terms exceeds {MAX_MATMUL_DEPTH}")
    batch = o.numel // (m * n)
    for t, name, rows in ((a, "a", m * k), (b, "b", n * k)):
        if t.numel // rows not in (1, batch):
            raise c.err(name, f"batch of {t.numel // rows}, expected 1 or the output's {batch}")
    c.offsets("a_offset", "b_offset", out="out_offset")
    c.param("out_mult", 0, MULT_MAX)
    c.param("out_shift", SHIFT_MIN, SHIFT_MAX)
    c.act()
