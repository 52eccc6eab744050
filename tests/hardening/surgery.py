"""Byte-level edits of a valid payload, by field name (offsets from docs/payload-format.md).

The writer refuses to produce invalid payloads, so hostile ones are made by taking a golden
payload and overwriting single fields; ``Surgeon`` knows where each header, tensor-record,
op-record, io-table, parameter and constant field lives.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from executorch_espnn.payload import Payload, decode
from executorch_espnn.payload.format import HEADER_SIZE, OP_SPECS, TENSOR_RECORD_SIZE

# name -> (offset, struct code)
HEADER_FIELDS: dict[str, tuple[int, str]] = {
    "format_major": (4, "H"), "format_minor": (6, "H"), "target": (11, "B"),
    "total_size": (12, "I"), "flags": (16, "I"), "n_tensors": (20, "H"), "n_ops": (22, "H"),
    "n_inputs": (24, "H"), "n_outputs": (26, "H"), "tensors_offset": (28, "I"),
    "io_offset": (32, "I"), "ops_offset": (36, "I"), "ops_size": (40, "I"),
    "const_offset": (44, "I"), "const_size": (48, "I"), "arena_size": (52, "I"),
}
TENSOR_FIELDS: dict[str, tuple[int, str]] = {
    "dtype": (0, "B"), "rank": (1, "B"), "storage": (2, "B"), "flags": (3, "B"),
    "dims[0]": (4, "H"), "dims[1]": (6, "H"), "dims[2]": (8, "H"), "dims[3]": (10, "H"),
    "offset": (12, "I"), "scale": (16, "f"), "zero_point": (20, "i"),
}
OP_FIELDS: dict[str, tuple[int, str]] = {
    "opcode": (0, "H"), "n_inputs": (2, "B"), "n_outputs": (3, "B"), "params_size": (4, "H"),
    "record_size": (6, "H"), "scratch_offset": (8, "I"), "scratch_size": (12, "I"),
}
OP_HEADER = 16


def _align4(n: int) -> int:
    return (n + 3) & ~3


@dataclass
class Surgeon:
    data: bytearray
    original: Payload

    @classmethod
    def of(cls, payload: bytes) -> Surgeon:
        return cls(bytearray(payload), decode(payload))

    def _put(self, at: int, code: str, value: int | float) -> Surgeon:
        # struct refuses values that do not fit the field: a "wrap" must be built from
        # representable values, never by silent truncation here
        struct.pack_into("<" + code, self.data, at, value)
        return self

    def _get(self, at: int, code: str) -> int:
        return int(struct.unpack_from("<" + code, self.data, at)[0])

    def raw(self, at: int, data: bytes) -> Surgeon:
        self.data[at : at + len(data)] = data
        return self

    def header(self, name: str, value: int) -> Surgeon:
        at, code = HEADER_FIELDS[name]
        return self._put(at, code, value)

    def get_header(self, name: str) -> int:
        at, code = HEADER_FIELDS[name]
        return self._get(at, code)

    def tensor(self, tid: int, name: str, value: int | float) -> Surgeon:
        at, code = TENSOR_FIELDS[name]
        return self._put(HEADER_SIZE + TENSOR_RECORD_SIZE * tid + at, code, value)

    def dims(self, tid: int, dims: tuple[int, int, int, int], rank: int | None = None) -> Surgeon:
        for k, d in enumerate(dims):
            self.tensor(tid, f"dims[{k}]", d)
        if rank is not None:
            self.tensor(tid, "rank", rank)
        return self

    def op_pos(self, index: int) -> int:
        pos = self.get_header("ops_offset")
        for _ in range(index):
            pos += self._get(pos + 6, "H")
        return pos

    def op(self, index: int, name: str, value: int) -> Surgeon:
        at, code = OP_FIELDS[name]
        return self._put(self.op_pos(index) + at, code, value)

    def op_tensor(self, index: int, slot: int, tid: int) -> Surgeon:
        """Tensor id of input ``slot`` (slot == n_inputs: the output)."""
        return self._put(self.op_pos(index) + OP_HEADER + 2 * slot, "H", tid)

    def param(self, index: int, name: str, value: int) -> Surgeon:
        op = self.original.ops[index]
        spec = OP_SPECS[op.opcode]
        at = (self.op_pos(index) + OP_HEADER + _align4(2 * (len(op.inputs) + 1))
              + 4 * spec.params.index(name))
        return self._put(at, "i", value)

    def io(self, entry: int, tid: int) -> Surgeon:
        """Entry ``entry`` of the io table (inputs first, then outputs)."""
        return self._put(self.get_header("io_offset") + 2 * entry, "H", tid)

    def const_i32(self, tid: int, index: int, value: int) -> Surgeon:
        t = self.original.tensors[tid]
        return self._put(self.get_header("const_offset") + t.offset + 4 * index, "i", value)

    def bytes(self) -> bytes:
        return bytes(self.data)
