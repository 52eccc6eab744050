"""Bytes of decoded state the C engine needs for a payload (``espnn_info_t.state_bytes``).

The engine decodes a payload into a caller-provided buffer of offsets and fixed-width fields
(the bound io buffers' addresses have 8-byte slots), so its size is the same on 32- and 64-bit
builds and can be computed here, ahead of time, for the generated model header.  The layout (see
``docs/engine.md``, "State layout") is a header, one record per tensor up to the last one that
is not a constant and an offset per constant after it, a record per delegate input/output and
per op, then per op its input ids (uint16, padded to 4 bytes) and its op
family's precomputed parameters.  Those sizes are the format's (``format.STATE_*_BYTES``,
``OpSpec.state_bytes``): the engine's ``espnn_format.h`` is generated from the same numbers and
each ``engine/ops/<family>.c`` static-asserts its state struct against them, so a struct that
changes is a compile error until ``format.py`` says so; ``tests/test_engine.py`` checks this
formula against ``espnn_inspect`` on every test payload in 64-bit and ``-m32`` builds.
"""

from __future__ import annotations

from . import format as spec
from .format import Storage
from .model import Payload


def _align4(n: int) -> int:
    return (n + 3) & ~3


def state_records(p: Payload) -> int:
    """Tensors with a full record in the state: up to the last one that is not a constant;
    the constants after it keep only their offset (``STATE_CONST_BYTES``)."""
    return max((i + 1 for i, t in enumerate(p.tensors) if t.storage != Storage.CONST), default=0)


def state_bytes(p: Payload) -> int:
    """``state_bytes`` that ``espnn_inspect`` reports for the encoded form of ``p``."""
    records = state_records(p)
    total = (
        spec.STATE_HEADER_BYTES
        + spec.STATE_TENSOR_BYTES * records
        + spec.STATE_CONST_BYTES * (len(p.tensors) - records)
        + spec.STATE_IO_BYTES * (len(p.inputs) + len(p.outputs))
        + spec.STATE_OP_BYTES * len(p.ops)
    )
    for op in p.ops:
        total += _align4(2 * len(op.inputs)) + spec.OP_SPECS[op.opcode].state_bytes
    return total
