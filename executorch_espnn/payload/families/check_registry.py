"""The validator's registry: one check per opcode, registered by decorator (``@check``, an
``OpcodeTable`` like the reference kernels'), and
``OpCheck``, the accessors a check uses (each raises ``PayloadError`` naming the field).

A check is the Python twin of the ``prepare`` of the opcode's C op family
(``engine/ops/<family>.c``): what the op needs of its tensors, parameters and constant
values.  The checks live in ``<family>/check.py``, beside the reference kernels that
execute the same opcodes (``<family>/reference.py``, the twin of ``eval``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

from ..errors import PayloadError
from ..format import MAX_ABS_BIAS, MAX_DIM, OP_SPECS, SHIFT_MAX, SHIFT_MIN, DType, Storage
from ..model import OpRec, Payload, TensorRec
from ..opcode_table import OpcodeTable


class OpCheck:
    """Helper bound to one op: accessors that raise PayloadError naming the field."""

    def __init__(self, p: Payload, index: int, op: OpRec, consts: bytes) -> None:
        self.p = p
        self.i = index
        self.op = op
        self.consts = consts
        self.spec = OP_SPECS[op.opcode]

    def err(self, field: str, msg: str) -> PayloadError:
        return PayloadError(field, msg, op=self.i)

    def t(self, slot: int) -> TensorRec:
        tid = self.op.inputs[slot]
        assert tid is not None
        return self.p.tensors[tid]

    def out(self) -> TensorRec:
        return self.p.tensors[self.op.output]

    def param(self, name: str, lo: int, hi: int) -> int:
        v = self.op.params[name]
        if not lo <= v <= hi:
            raise self.err(name, f"value {v} outside [{lo}, {hi}]")
        return v

    def dim_params(self, a: str, a_lo: int, b: str, b_lo: int) -> Iterator[tuple[int, int, int]]:
        """(i, a{i}, b{i}) for the four dims of a per-dim parameter pair (SLICE's start/step,
        PAD's before/after), each checked within [lo, MAX_DIM] as it is reached."""
        for i in range(4):
            yield i, self.param(f"{a}{i}", a_lo, MAX_DIM), self.param(f"{b}{i}", b_lo, MAX_DIM)

    def dtype(self, t: TensorRec, want: DType, field: str) -> None:
        if t.dtype != want:
            raise self.err(field, f"dtype {t.dtype.name}, expected {want.name}")

    def rank(self, t: TensorRec, want: int, field: str) -> None:
        if t.rank != want:
            raise self.err(field, f"rank {t.rank}, expected {want}")

    def int8_io(self, rank: int | None = None) -> tuple[TensorRec, TensorRec]:
        """Input 0 and the output, both int8 (and of ``rank``), checked in that order."""
        x, o = self.t(0), self.out()
        for t, name in ((x, "input"), (o, "output")):
            self.dtype(t, DType.INT8, name)
            if rank is not None:
                self.rank(t, rank, name)
        return x, o

    def same_dtype_and_rank(self, op_name: str) -> tuple[TensorRec, TensorRec]:
        """Input 0 and the output, of one dtype and rank."""
        x, o = self.t(0), self.out()
        if x.dtype != o.dtype or x.rank != o.rank:
            raise self.err("output", f"{op_name} must keep dtype and rank")
        return x, o

    def const(self, slot: int, field: str) -> TensorRec:
        t = self.t(slot)
        if t.storage != Storage.CONST:
            raise self.err(field, "must be a constant tensor")
        return t

    def const_values(self, t: TensorRec) -> np.ndarray:
        raw = self.consts[t.offset : t.offset + t.nbytes]
        return np.frombuffer(raw, dtype=np.dtype(t.dtype.numpy_name).newbyteorder("<"))

    def act(self) -> None:
        lo = self.param("act_min", -128, 127)
        hi = self.param("act_max", -128, 127)
        if lo > hi:
            raise self.err("act_min", f"act_min {lo} > act_max {hi}")

    def offsets(self, *names: str, out: str | None = None) -> None:
        for n in names:
            self.param(n, -127, 128)
        if out:
            self.param(out, -128, 127)

    def requant_arrays(self, n: int) -> None:
        mult = self.const(3, "mult")
        shift = self.const(4, "shift")
        for t, name in ((mult, "mult"), (shift, "shift")):
            self.dtype(t, DType.INT32, name)
            if t.dims != (n,):
                raise self.err(name, f"shape {t.dims}, expected ({n},)")
        m = self.const_values(mult)
        s = self.const_values(shift)
        if (m < 0).any():
            raise self.err("mult", f"negative multiplier at channel {int(np.argmax(m < 0))}")
        bad = (s < SHIFT_MIN) | (s > SHIFT_MAX)
        if bad.any():
            c = int(np.argmax(bad))
            raise self.err("shift", f"channel {c} shift {int(s[c])} outside [{SHIFT_MIN}, {SHIFT_MAX}]")

    def filter_bias(self, n_out: int) -> None:
        f = self.const(1, "filter")
        self.dtype(f, DType.INT8, "filter")
        w = self.const_values(f)
        if (w == -128).any():
            raise self.err("filter", "weights must be symmetric int8 in [-127, 127]")
        if self.op.inputs[2] is not None:
            b = self.const(2, "bias")
            self.dtype(b, DType.INT32, "bias")
            if b.dims != (n_out,):
                raise self.err("bias", f"shape {b.dims}, expected ({n_out},)")
            bv = self.const_values(b).astype(np.int64)
            if (np.abs(bv) > MAX_ABS_BIAS).any():
                raise self.err("bias", f"|bias| exceeds {MAX_ABS_BIAS}")

    def perm(self, rank: int) -> list[int]:
        perm = [self.op.params[f"perm{i}"] for i in range(4)]
        if sorted(perm[:rank]) != list(range(rank)) or perm[rank:] != list(range(rank, 4)):
            raise self.err("perm0", f"{perm} is not a permutation of rank {rank}")
        return perm

    def permuted(self, din: DType | None, dout: DType | None) -> None:
        """QUANTIZE, DEQUANTIZE, TRANSPOSE: ``out.dims[i] == in.dims[perm[i]]``, the dtypes
        given (or equal when None), a positive finite scale on the int8 side."""
        x, o = self.t(0), self.out()
        if din is not None:
            self.dtype(x, din, "input")
        if dout is not None:
            self.dtype(o, dout, "output")
        if din is None and x.dtype != o.dtype:
            raise self.err("output", "dtype differs from input")
        if x.rank != o.rank:
            raise self.err("output", f"rank {o.rank}, expected {x.rank}")
        perm = self.perm(x.rank)
        want = tuple(x.dims[perm[i]] for i in range(x.rank))
        if o.dims != want:
            raise self.err("output", f"shape {o.dims}, expected {want}")
        q = o if dout == DType.INT8 else x if din == DType.INT8 else None
        if q is not None and not (math.isfinite(q.scale) and q.scale > 0):
            raise self.err("scale", "quantized side needs a positive finite scale")


Check = Callable[[OpCheck], None]


CHECKS: OpcodeTable[Check] = OpcodeTable("validator check")
check = CHECKS.register
