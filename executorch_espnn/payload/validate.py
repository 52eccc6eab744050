"""Semantic validation of a decoded payload: the same rules the C engine applies.

Structural checks (sizes, offsets, counts) live in the reader; this module runs each op's
check (``payload/families/<family>/check.py``, registered by opcode in ``checks.CHECKS``: what the
op needs of its tensors and parameters, including the values of per-channel constants),
then the dataflow rules over the whole op list.  ``docs/payload-format.md`` lists every
rule; the C engine mirrors them in ``engine/src/validate.c`` and the ``prepare`` of each
``engine/ops/*.c`` family.
"""

from __future__ import annotations

from .checks import CHECKS, OpCheck
from .errors import PayloadError
from .format import NO_TENSOR, OP_SPECS, Storage
from .model import OpRec, Payload


def _fail(field: str, msg: str, op: int | None = None, tensor: int | None = None) -> PayloadError:
    return PayloadError(field, msg, op=op, tensor=tensor)


def check_op(p: Payload, index: int, op: OpRec) -> None:
    c = OpCheck(p, index, op, p.constants)
    if op.opcode not in CHECKS.by_opcode:  # pragma: no cover - the reader rejects unknown opcodes first
        raise c.err("opcode", f"unknown opcode {int(op.opcode)}")
    CHECKS.get(op.opcode)(c)


def _ranges_overlap(a0: int, a1: int, b0: int, b1: int) -> bool:
    return a0 < b1 and b0 < a1


def check_dataflow(p: Payload) -> None:
    """Def-before-use, single assignment, and no partial overlap of an op's arena operands."""
    written = [False] * len(p.tensors)
    for i, op in enumerate(p.ops):
        out = p.tensors[op.output]
        if out.storage not in (Storage.ARENA, Storage.OUTPUT):
            raise _fail("output", "op output must be an arena or output tensor", op=i)
        if written[op.output]:
            raise _fail("output", f"tensor {op.output} is written twice", op=i)
        for s, tid in enumerate(op.inputs):
            if tid is None:
                continue
            t = p.tensors[tid]
            if t.storage in (Storage.ARENA, Storage.OUTPUT) and not written[tid]:
                raise _fail(f"inputs[{s}]", f"tensor {tid} is read before any op writes it", op=i)
            if tid == op.output:
                raise _fail(f"inputs[{s}]", "op reads its own output tensor", op=i)
        if out.storage == Storage.ARENA:
            o0, o1 = out.offset, out.offset + out.nbytes
            for s, tid in enumerate(op.inputs):
                if tid is None:
                    continue
                t = p.tensors[tid]
                if t.storage != Storage.ARENA:
                    continue
                if not _ranges_overlap(o0, o1, t.offset, t.offset + t.nbytes):
                    continue
                spec = OP_SPECS[op.opcode]
                same = t.offset == out.offset and t.nbytes == out.nbytes
                if not (same and s in spec.in_place_slots and (spec.in_place_any_dims or t.dims == out.dims)):
                    raise _fail(f"inputs[{s}]", "output overlaps an input it cannot update in place", op=i)
            if op.scratch_size and _ranges_overlap(
                o0, o1, op.scratch_offset, op.scratch_offset + op.scratch_size
            ):
                raise _fail("scratch_offset", "scratch overlaps the op output", op=i)
        if op.scratch_size:
            for s, tid in enumerate(op.inputs):
                if tid is None:
                    continue
                t = p.tensors[tid]
                if t.storage == Storage.ARENA and _ranges_overlap(
                    op.scratch_offset, op.scratch_offset + op.scratch_size, t.offset, t.offset + t.nbytes
                ):
                    raise _fail("scratch_offset", f"scratch overlaps inputs[{s}]", op=i)
        written[op.output] = True
    for k, tid in enumerate(p.outputs):
        if not written[tid]:
            raise _fail("outputs", f"output {k} (tensor {tid}) is never written")


def check_ops(p: Payload) -> None:
    for i, op in enumerate(p.ops):
        spec = OP_SPECS[op.opcode]
        for s, tid in enumerate(op.inputs):
            if tid is None and not (not spec.variadic_inputs and spec.inputs[s].endswith("?")):
                raise _fail(f"inputs[{s}]", "required input is absent", op=i)
            if tid is not None and tid == NO_TENSOR:  # pragma: no cover - decoded to None
                raise _fail(f"inputs[{s}]", "bad tensor id", op=i)
        check_op(p, i, op)
    check_dataflow(p)
