"""Decode and validate a payload: the Python twin of the C engine's parser."""

from __future__ import annotations

import math
import struct
from typing import NamedTuple

from .errors import PayloadError
from .format import (
    ARENA_ALIGN,
    CONST_ALIGN,
    FORMAT_MAJOR,
    FORMAT_MINOR,
    HEADER_FLAG_IO_HOMES,
    HEADER_FLAGS_KNOWN,
    HEADER_SIZE,
    HEADER_STRUCT,
    MAGIC,
    MAX_DIM,
    MAX_IO,
    MAX_OP_INPUTS,
    MAX_OPS,
    MAX_RANK,
    MAX_TENSOR_BYTES,
    MAX_TENSORS,
    NO_HOME,
    NO_TENSOR,
    OP_HEADER_SIZE,
    OP_HEADER_STRUCT,
    OP_SPECS,
    TENSOR_FLAG_NHWC,
    TENSOR_FLAGS_KNOWN,
    TENSOR_RECORD_SIZE,
    TENSOR_STRUCT,
    DType,
    Opcode,
    Storage,
    Target,
)
from .model import OpRec, Payload, TensorRec
from .validate import check_ops


def _align4(n: int) -> int:
    return (n + 3) & ~3


class _Header(NamedTuple):
    fmaj: int
    fmin: int
    producer: tuple[int, int, int]
    target: Target
    total: int
    flags: int
    n_tensors: int
    n_ops: int
    n_inputs: int
    n_outputs: int
    tensors_off: int
    io_off: int
    ops_off: int
    ops_end: int
    const_off: int
    const_size: int
    arena: int


def decode(data: bytes | bytearray | memoryview, *, validate: bool = True) -> Payload:
    """Parse ``data``; with ``validate`` (the default) apply every rule the engine applies."""
    buf = bytes(data)
    h = _read_header(buf)
    tensors = [_read_tensor(buf, h, i) for i in range(h.n_tensors)]
    inputs, outputs = _read_io(buf, h, tensors)
    homes = _read_homes(buf, h, tensors, inputs + outputs)
    ops: list[OpRec] = []
    pos = h.ops_off
    for i in range(h.n_ops):
        op, pos = _read_op(buf, h, i, pos)
        ops.append(op)
    if pos != h.ops_end:
        raise PayloadError("ops_size", f"{h.ops_end - pos} bytes left after the last op")
    p = Payload(tensors, ops, inputs, outputs, buf[h.const_off:], h.arena, h.target, h.producer,
                h.fmaj, h.fmin, h.flags, homes)
    if validate:
        check_ops(p)
    return p


def _read_header(buf: bytes) -> _Header:
    """The header, each field checked against the buffer and the sections' layout."""
    if len(buf) < HEADER_SIZE:
        raise PayloadError("header", f"payload of {len(buf)} bytes is shorter than the {HEADER_SIZE}-byte header")
    (
        magic, fmaj, fmin, pmaj, pmin, ppatch, target, total, flags,
        n_t, n_o, n_in, n_out, t_off, io_off, ops_off, ops_size, c_off, c_size,
        arena, res0, res1,
    ) = HEADER_STRUCT.unpack_from(buf, 0)
    if magic != MAGIC:
        raise PayloadError("magic", f"{magic.hex()} is not {MAGIC.hex()} ('ESNN')")
    if fmaj != FORMAT_MAJOR or fmin > FORMAT_MINOR:
        raise PayloadError(
            "format_version",
            f"payload format {fmaj}.{fmin}, this reader reads format {FORMAT_MAJOR}.0-{FORMAT_MAJOR}.{FORMAT_MINOR}"
            " (a different major version has another layout): lower the model again with this"
            " executorch-espnn",
        )
    try:
        tgt = Target(target)
    except ValueError:
        raise PayloadError("target", f"unknown target {target}") from None
    if total != len(buf):
        raise PayloadError("total_size", f"header says {total} bytes, buffer has {len(buf)}")
    if flags & ~HEADER_FLAGS_KNOWN or (flags and fmin < 4) or res0 != 0 or res1 != 0:
        # (the io-homes flag is format 2.4's: a 2.3 payload that sets it is damaged)
        raise PayloadError("flags", "unknown flag or non-zero reserved word")
    for name, v, hi in (("n_tensors", n_t, MAX_TENSORS), ("n_ops", n_o, MAX_OPS),
                        ("n_inputs", n_in, MAX_IO), ("n_outputs", n_out, MAX_IO)):
        if not 1 <= v <= hi:
            raise PayloadError(name, f"{v} outside [1, {hi}]")
    if t_off != HEADER_SIZE:
        raise PayloadError("tensors_offset", f"{t_off}, expected {HEADER_SIZE}")
    if io_off != t_off + n_t * TENSOR_RECORD_SIZE:
        raise PayloadError("io_offset", f"{io_off}, expected {t_off + n_t * TENSOR_RECORD_SIZE}")
    want_ops = io_off + _align4(2 * (n_in + n_out)) + (4 * (n_in + n_out) if flags & HEADER_FLAG_IO_HOMES else 0)
    if ops_off != want_ops:
        raise PayloadError("ops_offset", f"{ops_off}, expected {want_ops}")
    ops_end = ops_off + ops_size
    if c_off % CONST_ALIGN or not ops_end <= c_off < ops_end + CONST_ALIGN:
        raise PayloadError("const_offset", f"{c_off} must be the first {CONST_ALIGN}-aligned offset after the ops")
    if c_off + c_size != total:
        raise PayloadError("const_size", f"constants end at {c_off + c_size}, payload at {total}")
    if arena > 0x7FFF_FFFF:
        raise PayloadError("arena_size", f"{arena} too large")
    return _Header(fmaj, fmin, (pmaj, pmin, ppatch), tgt, total, flags, n_t, n_o, n_in, n_out,
                   t_off, io_off, ops_off, ops_end, c_off, c_size, arena)


def _read_tensor(buf: bytes, h: _Header, i: int) -> TensorRec:
    """Tensor record ``i``: its dtype, dims, quantization and where its bytes are."""
    (dt, rank, st, fl, d0, d1, d2, d3, off, scale, zp) = TENSOR_STRUCT.unpack_from(
        buf, h.tensors_off + i * TENSOR_RECORD_SIZE
    )
    try:
        dtype, storage = DType(dt), Storage(st)
    except ValueError:
        raise PayloadError("dtype/storage", f"unknown dtype {dt} or storage {st}", tensor=i) from None
    if rank > MAX_RANK:
        raise PayloadError("rank", f"{rank} exceeds {MAX_RANK}", tensor=i)
    if fl & ~TENSOR_FLAGS_KNOWN or (fl & TENSOR_FLAG_NHWC and rank != 4):
        raise PayloadError("flags", f"bad flags {fl:#x}", tensor=i)
    all_dims = (d0, d1, d2, d3)
    for k, d in enumerate(all_dims):
        if k < rank and not 1 <= d <= MAX_DIM:
            raise PayloadError(f"dims[{k}]", f"{d} outside [1, {MAX_DIM}]", tensor=i)
        if k >= rank and d != 1:
            raise PayloadError(f"dims[{k}]", "unused dims must be 1", tensor=i)
    t = TensorRec(dtype, all_dims[:rank], storage, off, scale, zp, fl)
    nbytes = t.nbytes  # not stored: dims and dtype determine it
    if nbytes > MAX_TENSOR_BYTES:
        raise PayloadError("nbytes", f"dims and dtype give {nbytes} bytes, more than {MAX_TENSOR_BYTES}", tensor=i)
    if not math.isfinite(scale) or scale < 0:
        raise PayloadError("scale", "must be finite and >= 0", tensor=i)
    if dtype == DType.INT8 and not -128 <= zp <= 127:
        raise PayloadError("zero_point", f"{zp} outside int8", tensor=i)
    if storage == Storage.ARENA:
        if off % dtype.size or off + nbytes > h.arena:
            raise PayloadError("offset", f"arena range [{off}, {off + nbytes}) misaligned or past arena {h.arena}", tensor=i)
    elif storage == Storage.CONST:
        if off % CONST_ALIGN or off + nbytes > h.const_size:
            raise PayloadError("offset", f"constant range [{off}, {off + nbytes}) misaligned or past {h.const_size}", tensor=i)
    else:
        lim = h.n_inputs if storage == Storage.INPUT else h.n_outputs
        if off >= lim:
            raise PayloadError("offset", f"io index {off} >= {lim}", tensor=i)
        if dtype not in (DType.INT8, DType.FLOAT32):
            raise PayloadError("dtype", "delegate inputs/outputs must be int8 or float32", tensor=i)
    return t


def _read_io(buf: bytes, h: _Header, tensors: list[TensorRec]) -> tuple[list[int], list[int]]:
    """The delegate's input and output tables, each entry the io tensor of its index."""
    io = struct.unpack_from(f"<{h.n_inputs + h.n_outputs}H", buf, h.io_off)
    inputs, outputs = list(io[:h.n_inputs]), list(io[h.n_inputs:])
    for kind, ids, st in (("inputs", inputs, Storage.INPUT), ("outputs", outputs, Storage.OUTPUT)):
        for k, tid in enumerate(ids):
            if tid >= h.n_tensors or tensors[tid].storage != st or tensors[tid].offset != k:
                raise PayloadError(kind, f"entry {k} -> tensor {tid} is not {st.name.lower()} #{k}")

    # ...and every io tensor is the one its entry names: a second tensor claiming the same
    # delegate buffer with other dims would make the device read or write past that buffer
    for i, t in enumerate(tensors):
        if t.storage in (Storage.INPUT, Storage.OUTPUT):
            table = inputs if t.storage == Storage.INPUT else outputs
            if table[t.offset] != i:
                raise PayloadError(
                    "offset", f"io index {t.offset} is tensor {table[t.offset]}'s, not this tensor's", tensor=i
                )
    return inputs, outputs


def _read_homes(buf: bytes, h: _Header, tensors: list[TensorRec], io: list[int]) -> list[int] | None:
    """The io-homes table (format 2.4, HEADER_FLAG_IO_HOMES), each home inside the arena and
    aligned like an arena buffer; None when the payload has none."""
    if not h.flags & HEADER_FLAG_IO_HOMES:
        return None
    homes = list(struct.unpack_from(f"<{len(io)}I", buf, h.io_off + _align4(2 * len(io))))
    for k, (home, tid) in enumerate(zip(homes, io, strict=True)):
        if home == NO_HOME:
            continue
        nbytes = tensors[tid].nbytes
        if home % ARENA_ALIGN or home + nbytes > h.arena:
            raise PayloadError("io_homes", f"entry {k}: arena range [{home}, {home + nbytes}) misaligned or "
                               f"past arena {h.arena}", tensor=tid)
    return homes


def _read_op(buf: bytes, h: _Header, i: int, pos: int) -> tuple[OpRec, int]:
    """Op record ``i`` at ``pos``, and where the next one starts."""
    n_t = h.n_tensors
    if pos + OP_HEADER_SIZE > h.ops_end:
        raise PayloadError("ops_size", f"op {i} header runs past the ops section", op=i)
    code, nin, nout, psize, rsize, s_off, s_size = OP_HEADER_STRUCT.unpack_from(buf, pos)
    try:
        opcode = Opcode(code)
    except ValueError:
        raise PayloadError("opcode", f"unknown opcode {code}", op=i) from None
    spec = OP_SPECS[opcode]
    if spec.since_minor > h.fmin:
        raise PayloadError(
            "opcode", f"{opcode.name} needs format {FORMAT_MAJOR}.{spec.since_minor}, payload is {h.fmaj}.{h.fmin}", op=i
        )
    if nout != 1:
        raise PayloadError("n_outputs", f"{nout}, every op has exactly one output", op=i)
    if spec.variadic_inputs:
        if not 1 <= nin <= MAX_OP_INPUTS:
            raise PayloadError("n_inputs", f"{nin} outside [1, {MAX_OP_INPUTS}]", op=i)
    elif nin != len(spec.inputs):
        raise PayloadError("n_inputs", f"{nin}, {opcode.name} takes {len(spec.inputs)}", op=i)
    if psize != spec.params_size:
        raise PayloadError("params_size", f"{psize}, {opcode.name} has {spec.params_size}", op=i)
    want = OP_HEADER_SIZE + _align4(2 * (nin + 1)) + psize
    if rsize != want or pos + rsize > h.ops_end:
        raise PayloadError("record_size", f"{rsize}, expected {want} within the ops section", op=i)
    op_ids = struct.unpack_from(f"<{nin + 1}H", buf, pos + OP_HEADER_SIZE)
    ins: list[int | None] = []
    for s, tid in enumerate(op_ids[:nin]):
        if tid == NO_TENSOR:
            ins.append(None)
        elif tid >= n_t:
            raise PayloadError(f"inputs[{s}]", f"tensor id {tid} >= {n_t}", op=i)
        else:
            ins.append(tid)
    out_id = op_ids[nin]
    if out_id >= n_t:
        raise PayloadError("output", f"tensor id {out_id} >= {n_t}", op=i)
    pvals = struct.unpack_from(f"<{len(spec.params)}i", buf, pos + want - psize)
    if s_size == 0 and s_off != 0:
        raise PayloadError("scratch_offset", "must be 0 without scratch", op=i)
    if s_size and (s_off % 16 or s_off + s_size > h.arena):
        raise PayloadError("scratch_offset", f"[{s_off}, {s_off + s_size}) misaligned or past arena {h.arena}", op=i)
    op = OpRec(opcode, tuple(ins), out_id, dict(zip(spec.params, pvals, strict=True)), s_off, s_size)
    return op, pos + rsize
