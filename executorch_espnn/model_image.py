"""The model image: a .pte with the facts EspnnModel needs to run it from a flash partition.

With `custom_executorch_storage = partition` the firmware carries no model bytes; the build
writes this image, `pio run -t uploadmodel` writes it into the model partition, and
EspnnModel::begin() maps it and checks it against what the firmware was built for.  This module
is the one Python home of the layout (writer and reader); espnn_component/include/
espnn_model_image.h is its C twin (parser, checks, sha256).  docs/model-partition.md describes it.

Layout (little-endian, HEADER_SIZE bytes, then the .pte at PTE_OFFSET):

    magic "ESPNNIMG", image format version, header size, .pte offset, .pte length, .pte sha256,
    ExecuTorch / executorch-espnn versions, payload format major.minor, lowering target,
    the pool sizes EspnnModel allocates (arena, state, planned, method, temp) and the pointer
    size they were measured with, the I/O signature (text + its sha256), each I/O tensor's
    quantization (scale, zero point), and last the sha256 of everything before it.

The I/O signature names, dtypes and shapes the program's inputs and outputs: a firmware runs
any image whose signature equals its own (same code, other weights), so the generated header
of two such models is byte for byte the same and uploading one never relinks the app.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .firmware.model_info import POOL_FIELDS, ModelInfo

MAGIC = b"ESPNNIMG"
FORMAT_VERSION = 1
HEADER_SIZE = 512
PTE_OFFSET = HEADER_SIZE  # 128-aligned: the .pte's delegate segments keep their alignment
PTE_ALIGN = 16
STRING_BYTES = 16  # version and target fields, NUL-padded
SIGNATURE_TEXT_BYTES = 160  # the readable signature (cut with "..."; the sha256 is exact)
MAX_TENSORS = 16  # inputs + outputs whose quantization the image carries
SECTOR = 4096  # flash sector: partition sizes are multiples of it
DEFAULT_LABEL = "espnn_model"
DATA_SUBTYPE = 0x40  # a custom data subtype (ESP-IDF reserves 0x00-0x3F for its own)
DEFAULT_HEADROOM_PERCENT = 25  # room for a later, larger model of the same I/O
HOST_PARTITION_FILE = "model_partition.bin"  # host board: the file standing for the partition

# magic, format version, header size, .pte offset, .pte length, .pte sha256,
# executorch version, package version, payload major, payload minor, target,
# arena, state, planned, method allocator, temp allocator, pointer bytes,
# n_inputs, n_outputs, signature sha256, signature text
_FIXED = struct.Struct(f"<8sIIII32s{STRING_BYTES}s{STRING_BYTES}sHH{STRING_BYTES}s6I2I32s{SIGNATURE_TEXT_BYTES}s")
_QUANT = struct.Struct("<fi")
_CHECKSUM_AT = HEADER_SIZE - 32
_RESERVED = _CHECKSUM_AT - _FIXED.size - MAX_TENSORS * _QUANT.size
assert _RESERVED >= 0, "the image header fields outgrew HEADER_SIZE"


class ModelImageError(ValueError):
    """An image that cannot be read or written; str() says what is wrong."""


def io_signature(inputs: Sequence[Mapping[str, Any]], outputs: Sequence[Mapping[str, Any]]) -> str:
    """What a firmware built for this model can run: names, dtypes and shapes of the program's
    inputs and outputs (not their quantization, which the image carries), e.g.
    "in x:float32[1,4]; out output0:float32[1,3]"."""
    def one(t: Mapping[str, Any]) -> str:
        dims = ",".join(str(int(d)) for d in t["dims"])
        return f"{t['name']}:{t['dtype_name']}[{dims}]"

    return "; ".join([*(f"in {one(t)}" for t in inputs), *(f"out {one(t)}" for t in outputs)])


def signature_sha256(signature: str) -> str:
    return hashlib.sha256(signature.encode("utf8")).hexdigest()


def _fixed_text(text: str, size: int, what: str) -> bytes:
    raw = text.encode("utf8")
    if len(raw) >= size:
        raise ModelImageError(f"{what} '{text}' is longer than the image's {size - 1} bytes")
    return raw


def _signature_text(signature: str) -> bytes:
    raw = signature.encode("utf8")
    if len(raw) < SIGNATURE_TEXT_BYTES:
        return raw
    return raw[: SIGNATURE_TEXT_BYTES - 4] + b"..."


@dataclass(frozen=True)
class ModelImage:
    pte: bytes
    executorch_version: str
    package_version: str
    format_major: int
    format_minor: int
    target: str
    sizes: Mapping[str, int]  # POOL_FIELDS + "pointer_bytes"
    signature: str
    n_inputs: int
    n_outputs: int
    quant: tuple[tuple[float, int], ...]  # (scale, zero point) per input then output

    @classmethod
    def from_info(cls, pte: bytes, info: ModelInfo, target: str) -> ModelImage:
        """From the model step's ModelInfo (firmware.render.model_info), the .pte bytes and the
        lowering target."""
        p = info.pte.to_dict()
        v = info.versions
        tensors = [*p["inputs"], *p["outputs"]]
        if len(tensors) > MAX_TENSORS:
            raise ModelImageError(f"the program has {len(tensors)} inputs and outputs; a model image "
                                  f"carries at most {MAX_TENSORS}")
        return cls(
            pte=pte,
            executorch_version=v.executorch,
            package_version=v.package,
            format_major=int(v.format_major),
            format_minor=int(v.format_minor),
            target=target,
            sizes={**info.sizes.pools(), "pointer_bytes": info.sizes.pointer_bytes},
            signature=io_signature(p["inputs"], p["outputs"]),
            n_inputs=len(p["inputs"]),
            n_outputs=len(p["outputs"]),
            quant=tuple((float(t.get("scale") or 0.0), int(t.get("zero_point") or 0)) for t in tensors),
        )

    def to_bytes(self) -> bytes:
        quant = list(self.quant) + [(0.0, 0)] * (MAX_TENSORS - len(self.quant))
        fixed = _FIXED.pack(
            MAGIC, FORMAT_VERSION, HEADER_SIZE, PTE_OFFSET, len(self.pte),
            hashlib.sha256(self.pte).digest(),
            _fixed_text(self.executorch_version, STRING_BYTES, "ExecuTorch version"),
            _fixed_text(self.package_version, STRING_BYTES, "executorch-espnn version"),
            self.format_major, self.format_minor,
            _fixed_text(self.target, STRING_BYTES, "target"),
            *(int(self.sizes[k]) for k in (*POOL_FIELDS, "pointer_bytes")),
            self.n_inputs, self.n_outputs,
            bytes.fromhex(signature_sha256(self.signature)), _signature_text(self.signature),
        )
        head = fixed + b"".join(_QUANT.pack(s, z) for s, z in quant) + bytes(_RESERVED)
        head += hashlib.sha256(head).digest()
        assert len(head) == HEADER_SIZE
        return head + self.pte

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.pte).hexdigest()


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf8", errors="replace")


def read(data: bytes) -> ModelImage:
    """Parse and check an image (the checks begin() makes that need no firmware)."""
    if len(data) < HEADER_SIZE:
        raise ModelImageError(f"{len(data)} bytes: shorter than the {HEADER_SIZE}-byte image header")
    if data[:8] != MAGIC:
        raise ModelImageError(f"no model image (magic {data[:8]!r}, expected {MAGIC!r})")
    if hashlib.sha256(data[:_CHECKSUM_AT]).digest() != data[_CHECKSUM_AT:HEADER_SIZE]:
        raise ModelImageError("the image header's checksum does not match: the header is corrupt")
    f = _FIXED.unpack_from(data)
    (_, version, header_size, offset, length, sha, et, pkg, fmaj, fmin, target,
     arena, state, planned, method, temp, ptr, n_in, n_out, _sig_sha, sig_text) = f
    if version != FORMAT_VERSION or header_size != HEADER_SIZE or offset != PTE_OFFSET:
        raise ModelImageError(f"image format version {version} (header {header_size}, .pte at {offset}); "
                              f"this reader knows version {FORMAT_VERSION}")
    if offset + length > len(data):
        raise ModelImageError(f"the .pte needs {length} bytes at {offset}, the image has {len(data)}")
    pte = data[offset:offset + length]
    if hashlib.sha256(pte).digest() != sha:
        raise ModelImageError("the .pte's sha256 does not match the image header: the image is corrupt")
    quant = tuple(_QUANT.unpack_from(data, _FIXED.size + i * _QUANT.size) for i in range(n_in + n_out))
    sizes = dict(zip((*POOL_FIELDS, "pointer_bytes"), (arena, state, planned, method, temp, ptr), strict=True))
    return ModelImage(pte, _text(et), _text(pkg), fmaj, fmin, _text(target), sizes, _text(sig_text),
                      n_in, n_out, tuple((float(s), int(z)) for s, z in quant))


def signature_sha256_of(data: bytes) -> str:
    """The exact signature hash stored in an image (the text field may be cut)."""
    return bytes(_FIXED.unpack_from(data)[19]).hex()


def partition_size(image_bytes: int, headroom_percent: int) -> int:
    """The model partition's size: the image plus `headroom_percent` for later models, rounded
    up to a 64 KiB multiple (so a retrained model of the same architecture, whose image differs
    by a few bytes, gets the same partition and the same firmware), at least one sector."""
    need = image_bytes + (image_bytes * headroom_percent + 99) // 100
    step = 16 * SECTOR
    return max(SECTOR, (need + step - 1) // step * step)
