"""Encode a payload.  The result is decoded and validated before it is returned, so the
writer cannot emit anything the device parser must reject."""

from __future__ import annotations

import struct

from .errors import PayloadError
from .format import (
    CONST_ALIGN,
    HEADER_FLAG_IO_HOMES,
    HEADER_SIZE,
    HEADER_STRUCT,
    MAGIC,
    MAX_DIM,
    MAX_IO,
    MAX_OPS,
    MAX_PAYLOAD_BYTES,
    MAX_RANK,
    MAX_TENSORS,
    NO_TENSOR,
    OP_HEADER_SIZE,
    OP_HEADER_STRUCT,
    OP_SPECS,
    TENSOR_STRUCT,
)
from .model import Payload
from .reader import decode


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def encode(p: Payload) -> bytes:
    if not 1 <= len(p.tensors) <= MAX_TENSORS:
        raise PayloadError("n_tensors", f"{len(p.tensors)} outside [1, {MAX_TENSORS}]")
    if not 1 <= len(p.ops) <= MAX_OPS:
        raise PayloadError("n_ops", f"{len(p.ops)} outside [1, {MAX_OPS}]")
    if not (1 <= len(p.inputs) <= MAX_IO and 1 <= len(p.outputs) <= MAX_IO):
        raise PayloadError("n_inputs", f"{len(p.inputs)} inputs / {len(p.outputs)} outputs, each must be 1..{MAX_IO}")
    body = bytearray()
    for i, t in enumerate(p.tensors):
        if t.rank > MAX_RANK:
            raise PayloadError("rank", f"{t.rank} exceeds {MAX_RANK}", tensor=i)
        for k, d in enumerate(t.dims):
            # dims are u16 in the record: check here, or struct.pack fails without naming them
            if not 1 <= d <= MAX_DIM:
                raise PayloadError(f"dims[{k}]", f"{d} outside [1, {MAX_DIM}]", tensor=i)
        dims = list(t.dims) + [1] * (4 - len(t.dims))
        body += TENSOR_STRUCT.pack(
            int(t.dtype), len(t.dims), int(t.storage), t.flags, *dims,
            t.offset, t.scale, t.zero_point,
        )
    io_off = HEADER_SIZE + len(body)
    io = list(p.inputs) + list(p.outputs)
    body += struct.pack(f"<{len(io)}H", *io)
    body += b"\0" * (_align(len(io) * 2, 4) - len(io) * 2)
    flags = p.flags & ~HEADER_FLAG_IO_HOMES
    if p.io_homes is not None:
        if len(p.io_homes) != len(io):
            raise PayloadError("io_homes", f"{len(p.io_homes)} entries for {len(io)} inputs and outputs")
        flags |= HEADER_FLAG_IO_HOMES
        body += struct.pack(f"<{len(io)}I", *p.io_homes)
    ops_off = HEADER_SIZE + len(body)
    ops = bytearray()
    for op in p.ops:
        spec = OP_SPECS[op.opcode]
        ids = [NO_TENSOR if t is None else t for t in op.inputs] + [op.output]
        id_bytes = struct.pack(f"<{len(ids)}H", *ids)
        id_bytes += b"\0" * (_align(len(id_bytes), 4) - len(id_bytes))
        missing = [k for k in spec.params if k not in op.params]
        extra = [k for k in op.params if k not in spec.params]
        if missing or extra:
            raise PayloadError("params", f"{op.opcode.name}: missing {missing}, unknown {extra}")
        params = struct.pack(f"<{len(spec.params)}i", *(op.params[k] for k in spec.params))
        rsize = OP_HEADER_SIZE + len(id_bytes) + len(params)
        ops += OP_HEADER_STRUCT.pack(
            int(op.opcode), len(op.inputs), 1, len(params), rsize, op.scratch_offset, op.scratch_size
        )
        ops += id_bytes + params
    body += ops
    const_off = _align(HEADER_SIZE + len(body), CONST_ALIGN)
    body += b"\0" * (const_off - HEADER_SIZE - len(body))
    body += p.constants
    total = HEADER_SIZE + len(body)
    if total > MAX_PAYLOAD_BYTES:
        raise PayloadError("total_size", f"{total} bytes exceeds {MAX_PAYLOAD_BYTES}")
    header = HEADER_STRUCT.pack(
        MAGIC, p.format_major, p.format_minor, *p.producer, int(p.target), total, flags,
        len(p.tensors), len(p.ops), len(p.inputs), len(p.outputs),
        HEADER_SIZE, io_off, ops_off, len(ops), const_off, len(p.constants), p.arena_size, 0, 0,
    )
    data = header + bytes(body)
    decode(data)  # the writer's guarantee: everything it emits passes the device's rules
    return data


class ConstantPool:
    """Accumulates constant tensors at 16-byte aligned offsets."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def add(self, raw: bytes) -> int:
        off = _align(len(self._buf), CONST_ALIGN)
        self._buf += b"\0" * (off - len(self._buf)) + raw
        return off

    def bytes(self) -> bytes:
        return bytes(self._buf)
