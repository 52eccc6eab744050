"""In-memory form of a payload: what the writer encodes and the reader decodes."""

from __future__ import annotations

from dataclasses import dataclass, field

from .format import (
    FORMAT_MAJOR,
    FORMAT_MINOR,
    NO_HOME,
    DType,
    Opcode,
    Storage,
    Target,
)


@dataclass
class TensorRec:
    dtype: DType
    dims: tuple[int, ...]  # physical order; len == rank (0..4)
    storage: Storage
    offset: int = 0  # arena/const byte offset, or the io index
    scale: float = 0.0
    zero_point: int = 0
    flags: int = 0

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.size


@dataclass
class OpRec:
    opcode: Opcode
    inputs: tuple[int | None, ...]  # None: an absent optional input
    output: int
    params: dict[str, int] = field(default_factory=dict)
    scratch_offset: int = 0
    scratch_size: int = 0


@dataclass
class Payload:
    tensors: list[TensorRec]
    ops: list[OpRec]
    inputs: list[int]  # tensor ids, in delegate argument order
    outputs: list[int]
    constants: bytes
    arena_size: int
    target: Target = Target.GENERIC
    producer: tuple[int, int, int] = (0, 0, 0)
    format_major: int = FORMAT_MAJOR
    format_minor: int = FORMAT_MINOR
    flags: int = 0  # header flags; HEADER_FLAG_IO_HOMES is set exactly when io_homes is not None
    # the inputs' then the outputs' arena offsets (NO_HOME: none), or None: no io-homes table
    io_homes: list[int] | None = None

    def homes(self) -> dict[int, int]:
        """Tensor id -> arena offset of every delegate input/output with an io home."""
        if self.io_homes is None:
            return {}
        return {tid: home for tid, home in zip(self.inputs + self.outputs, self.io_homes, strict=True)
                if home != NO_HOME}
