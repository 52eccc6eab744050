"""The delegate payload: format constants, writer, reader (see docs/payload-format.md)."""

from .errors import PayloadError
from .format import DType, Opcode, Storage, Target
from .model import OpRec, Payload, TensorRec
from .reader import decode
from .writer import ConstantPool, encode

__all__ = [
    "ConstantPool",
    "DType",
    "OpRec",
    "Opcode",
    "Payload",
    "PayloadError",
    "Storage",
    "Target",
    "TensorRec",
    "decode",
    "encode",
]
