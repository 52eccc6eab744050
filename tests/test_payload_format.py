"""The payload format has one Python source (``payload/format.py``); the C engine's tables are
generated from it and committed, and must be current.  The writer must round-trip through
the reader."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest

from executorch_espnn.payload import (
    ConstantPool,
    DType,
    Opcode,
    OpRec,
    Payload,
    PayloadError,
    Storage,
    TensorRec,
    decode,
    encode,
)
from executorch_espnn.payload import format as F

ROOT = Path(__file__).resolve().parents[1]
C_HEADER = ROOT / "espnn_component" / "engine" / "include" / "espnn_format.h"


def _c_defines() -> dict[str, int]:
    out: dict[str, int] = {}
    for m in re.finditer(r"^#define (ESPNN_\w+) (.+?)\s*(?:/\*.*)?$", C_HEADER.read_text(), re.M):
        expr = m.group(2).replace("u", "").replace("L", "")
        try:
            out[m.group(1)] = int(eval(expr, {}))
        except Exception:
            continue
    return out


def test_generated_c_tables_are_current() -> None:
    from executorch_espnn.payload import ctables

    assert ctables.stale() == [], (
        f"generated C files are stale: run `{ctables.COMMAND}` and commit the result")


def test_ctables_check_names_the_stale_file_and_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from executorch_espnn.payload import ctables

    for rel in ctables.GENERATED:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((ROOT / rel).read_text())
    header = "espnn_component/engine/include/espnn_format.h"
    edited = (tmp_path / header).read_text().replace("#define ESPNN_MAX_OPS 4096", "#define ESPNN_MAX_OPS 8192")
    (tmp_path / header).write_text(edited)
    assert ctables.main(["--check", "--root", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{header} is stale" in err and "run `python -m executorch_espnn.payload.ctables`" in err, err
    assert "registry.c" not in err
    assert ctables.main(["--root", str(tmp_path)]) == 0
    assert header in capsys.readouterr().out
    assert ctables.main(["--check", "--root", str(tmp_path)]) == 0
    assert (tmp_path / header).read_text() == (ROOT / header).read_text()


def test_c_header_matches_python() -> None:
    """The template maps each Python constant to the C name the engine uses (the generation
    test above only says the committed copy is what the template renders)."""
    c = _c_defines()
    assert bytes(c[f"ESPNN_MAGIC_{i}"] for i in range(4)) == F.MAGIC
    pairs = {
        "FORMAT_MAJOR": F.FORMAT_MAJOR, "FORMAT_MINOR": F.FORMAT_MINOR,
        "HEADER_SIZE": F.HEADER_SIZE, "TENSOR_RECORD_SIZE": F.TENSOR_RECORD_SIZE,
        "OP_HEADER_SIZE": F.OP_HEADER_SIZE, "CONST_ALIGN": F.CONST_ALIGN,
        "ARENA_ALIGN": F.ARENA_ALIGN, "NO_TENSOR": F.NO_TENSOR,
        "MAX_TENSORS": F.MAX_TENSORS, "MAX_OPS": F.MAX_OPS, "MAX_IO": F.MAX_IO,
        "MAX_OP_INPUTS": F.MAX_OP_INPUTS, "MAX_RANK": F.MAX_RANK, "MAX_DIM": F.MAX_DIM,
        "MAX_PAYLOAD_BYTES": F.MAX_PAYLOAD_BYTES, "MAX_ARENA_BYTES": F.MAX_ARENA_BYTES,
        "MAX_TENSOR_BYTES": F.MAX_TENSOR_BYTES,
        "SHIFT_MIN": F.SHIFT_MIN, "SHIFT_MAX": F.SHIFT_MAX,
        "ADD_LEFT_SHIFT_MAX": F.ADD_LEFT_SHIFT_MAX, "SOFTMAX_SHIFT_MAX": F.SOFTMAX_SHIFT_MAX,
        "SOFTMAX_MAX_ROW": F.SOFTMAX_MAX_ROW,
        "SOFTMAX_OUT_ZERO_POINT": F.SOFTMAX_OUT_ZERO_POINT,
        "MAX_REDUCTION": F.MAX_REDUCTION, "MAX_ABS_BIAS": F.MAX_ABS_BIAS,
        "MAX_MEAN_COUNT": F.MAX_MEAN_COUNT, "MAX_POOL_WINDOW": F.MAX_POOL_WINDOW,
        "AVG_DIVISOR_VALID": F.AVG_DIVISOR_VALID,
        "AVG_DIVISOR_INCLUDE_PAD": F.AVG_DIVISOR_INCLUDE_PAD,
        "TENSOR_FLAG_NHWC": F.TENSOR_FLAG_NHWC, "TENSOR_FLAGS_KNOWN": F.TENSOR_FLAGS_KNOWN,
        "TARGET_COUNT": len(F.Target),
        "OP_COUNT": max(F.Opcode) + 1,
    }
    for e in F.Target:
        pairs[f"TARGET_{e.name}"] = int(e)
    for e in F.DType:
        pairs[f"DTYPE_{e.name}"] = int(e)
    for e in F.Storage:
        pairs[f"STORAGE_{e.name}"] = int(e)
    for op, spec in F.OP_SPECS.items():
        pairs[f"OP_{op.name}"] = int(op)
        pairs[f"PARAMS_{op.name}"] = len(spec.params)
        for i, name in enumerate(spec.params):
            pairs[f"P_{op.name}_{name.upper()}"] = i
    for name, value in pairs.items():
        assert c.get(f"ESPNN_{name}") == value, name
    c_ops = {k for k in c if k.startswith("ESPNN_OP_") and k != "ESPNN_OP_COUNT"}
    c_ops.discard("ESPNN_OP_HEADER_SIZE")
    assert c_ops == {f"ESPNN_OP_{op.name}" for op in F.Opcode}


def _lut_payload() -> Payload:
    pool = ConstantPool()
    table = pool.add(np.arange(-128, 128, dtype=np.int8)[::-1].copy().tobytes())
    return Payload(
        tensors=[
            TensorRec(DType.INT8, (1, 4), Storage.INPUT, 0, 0.125, 3),
            TensorRec(DType.INT8, (256,), Storage.CONST, table),
            TensorRec(DType.INT8, (1, 4), Storage.OUTPUT, 0, 0.125, 3),
        ],
        ops=[OpRec(Opcode.LUT, (0, 1), 2)],
        inputs=[0], outputs=[2], constants=pool.bytes(), arena_size=0,
        producer=(0, 1, 0),
    )


def test_roundtrip() -> None:
    p = _lut_payload()
    data = encode(p)
    assert data[:4] == b"ESNN" and len(data) % 16 == 0
    q = decode(data)
    assert q.tensors == p.tensors and q.ops == p.ops and q.constants == p.constants
    assert q.producer == (0, 1, 0)


@pytest.mark.parametrize(
    ("offset", "fmt", "value", "field"),
    [
        (0, "<4s", b"XXXX", "magic"),
        (4, "<H", 1, "format_version"),
        (4, "<H", 3, "format_version"),
        (6, "<H", 9, "format_version"),
        (11, "<B", 99, "target"),
        (16, "<I", 2, "flags"),
        (20, "<H", 0, "n_tensors"),
    ],
)
def test_reader_rejects_header_fields(offset: int, fmt: str, value: object, field: str) -> None:
    data = bytearray(encode(_lut_payload()))
    struct.pack_into(fmt, data, offset, value)
    with pytest.raises(PayloadError) as e:
        decode(bytes(data))
    assert e.value.field == field


def test_tensor_record_layout() -> None:
    """Format 2.0's 24-byte record, field by field at the documented offsets."""
    assert F.FORMAT_MAJOR == 2 and F.TENSOR_RECORD_SIZE == 24
    p = _lut_payload()
    p.tensors[0] = TensorRec(DType.INT8, (1, 4), Storage.INPUT, 0, 0.125, -3)
    data = encode(p)
    n = len(p.tensors)
    assert struct.unpack_from("<I", data, 32)[0] == 64 + 24 * n  # io_offset
    table = data[64 : 64 + 24 * n]
    rec0, rec1 = table[:24], table[24:48]
    assert rec0[:4] == bytes([DType.INT8, 2, Storage.INPUT, 0])
    assert struct.unpack_from("<4H", rec0, 4) == (1, 4, 1, 1)
    assert struct.unpack_from("<I", rec0, 12)[0] == 0
    assert struct.unpack_from("<f", rec0, 16)[0] == 0.125
    assert struct.unpack_from("<i", rec0, 20)[0] == -3
    assert rec1[:4] == bytes([DType.INT8, 1, Storage.CONST, 0])
    assert struct.unpack_from("<4HI", rec1, 4) == (256, 1, 1, 1, p.tensors[1].offset)
    # the io table starts right after the last record
    assert struct.unpack_from("<2H", data, 64 + 24 * n) == (0, 2)


def test_reader_rejects_format_1_naming_both_versions() -> None:
    """A format 1.x payload (40-byte records) is not read as 2.x: the error says which
    version the payload has and which this reader reads."""
    data = bytearray(encode(_lut_payload()))
    struct.pack_into("<HH", data, 4, 1, 0)
    with pytest.raises(PayloadError, match=r"payload format 1\.0, this reader reads format 2\.0") as e:
        decode(bytes(data))
    assert e.value.field == "format_version"


def test_reader_computes_nbytes_and_rejects_past_32_bits() -> None:
    """nbytes is not stored; a dims product past 2^32 bytes is rejected by name (a wrapped
    32-bit size would slip through the offset range checks)."""
    data = bytearray(encode(_lut_payload()))
    assert decode(bytes(data)).tensors[1].nbytes == 256
    at = 64 + 24 * 1  # the constant table: int8, re-dimensioned to 256 x 65535 x 65535 x 1
    struct.pack_into("<B", data, at + 1, 3)
    struct.pack_into("<4H", data, at + 4, 256, 65535, 65535, 1)
    with pytest.raises(PayloadError) as e:
        decode(bytes(data))
    assert (e.value.field, e.value.tensor) == ("nbytes", 1)


def test_writer_rejects_dims_past_u16() -> None:
    p = _lut_payload()
    p.tensors[0] = TensorRec(DType.INT8, (1, 65536), Storage.INPUT, 0, 0.125, 3)
    with pytest.raises(PayloadError) as e:
        encode(p)
    assert (e.value.field, e.value.tensor) == ("dims[1]", 0)


def test_reader_rejects_truncation() -> None:
    data = encode(_lut_payload())
    for n in (0, 10, 63, len(data) - 1):
        with pytest.raises(PayloadError):
            decode(data[:n])


def test_writer_refuses_what_the_reader_rejects() -> None:
    p = _lut_payload()
    p.tensors[1] = TensorRec(DType.INT8, (255,), Storage.CONST, 0)
    with pytest.raises(PayloadError, match="table"):
        encode(p)


def test_dataflow_read_before_write() -> None:
    pool = ConstantPool()
    table = pool.add(bytes(256))
    p = Payload(
        tensors=[
            TensorRec(DType.INT8, (4,), Storage.INPUT, 0, 0.1, 0),
            TensorRec(DType.INT8, (256,), Storage.CONST, table),
            TensorRec(DType.INT8, (4,), Storage.ARENA, 0, 0.1, 0),
            TensorRec(DType.INT8, (4,), Storage.OUTPUT, 0, 0.1, 0),
        ],
        ops=[OpRec(Opcode.LUT, (2, 1), 3), OpRec(Opcode.LUT, (0, 1), 2)],
        inputs=[0], outputs=[3], constants=pool.bytes(), arena_size=16,
    )
    with pytest.raises(PayloadError, match="read before any op writes it"):
        encode(p)


def test_every_opcode_has_a_validator_check() -> None:
    from executorch_espnn.payload.checks import CHECKS

    for op in F.Opcode:
        assert op in CHECKS.by_opcode, (
            f"{op.name} has no validator check: add one with @check(Opcode.{op.name}) in "
            "executorch_espnn/payload/families/<family>/check.py (docs/adding-an-operator.md)")
