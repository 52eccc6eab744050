"""The C engine (espnn_component/engine) against the Python reference and the Python reader.

- Differential: on every case of ``payload_factory`` the engine's outputs equal
  ``reference.run_delegate`` byte for byte, in a plain 64-bit build and in a ``-m32`` build
  with ASan and UBSan (32-bit ``size_t``).  Every test build defines ``ESPNN_HOST_STRICT``:
  the host ESP-NN kernels abort if the engine hands them a grouped or dilated convolution, a
  dilated depthwise one or a softmax row ESP-NN cannot compute, so passing these tests also
  proves the engine routes those cases to its own kernels.
- Invalid payloads: targeted corruptions give the right status and field in C, the same
  field in Python, and no sanitizer report; randomly mutated payloads are accepted or
  rejected alike by ``payload.decode`` and ``espnn_inspect``, and those both accept run to the
  reference's bytes.
- ``payload.state.state_bytes`` equals ``espnn_inspect``'s, in 64- and 32-bit builds, in the
  factory's mixed tensor order and renumbered constants-last (the lowering's order).
- With ``ESPNN_ESP_NN_DIR`` set to an ESP-NN checkout, the engine built on ESP-NN's own ANSI
  kernels gives the same bytes as on the host kernels.
"""

from __future__ import annotations

import functools
import os
import random
import re
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import engine_helpers as eh
import numpy as np
import numpy.typing as npt
import pytest

from devkit import payload_factory as pf
from devkit.scratch_helpers import banded, op_scratch
from executorch_espnn import component_sources
from executorch_espnn.payload import (
    DType,
    Opcode,
    OpRec,
    Payload,
    PayloadError,
    Storage,
    Target,
    TensorRec,
    decode,
    encode,
    writer,
)
from executorch_espnn.payload import format as F
from executorch_espnn.payload.order import constants_last, renumber
from executorch_espnn.payload.state import state_bytes
from executorch_espnn.reference import run_delegate

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

Array = npt.NDArray[np.generic]


@functools.cache
def _cases() -> dict[str, pf.Case]:
    extra = [
        # rows past 511 run on the engine's own softmax kernel (STRICT aborts otherwise);
        # an all-equal row of 1000 makes the sum reach 2^28: the final shift exceeds 31
        pf.softmax_case("softmax_long_rows", shape=(3, 700), logit_scale=1.5, seed=11),
        pf.softmax_case("softmax_flat_1000", shape=(1, 1000), seed=12,
                        x_override=np.full((1, 1000), 7, dtype=np.int8),
                        q_in=pf.QParams(0.1, 0)),
        pf.softmax_case("softmax_max_row", shape=(1, 4095), logit_scale=0.5, seed=13),
    ]
    return {c.name: c for c in [*pf.all_cases(), *extra]}


CASE_NAMES = sorted(_cases())


@functools.cache
def _exe(variant_name: str) -> Path:
    return eh.build(_variant(variant_name))


def _variant(name: str) -> eh.Variant:
    return {v.name: v for v in (eh.HOST, eh.M32, eh.ASAN64, eh.ASAN32, eh.CHIP)}[name]


def _bytes(arrays: list[Array]) -> list[bytes]:
    return [np.ascontiguousarray(a).tobytes() for a in arrays]


def _run(variant: str, payload: bytes, inputs: list[Array], n_out: int,
         extra: tuple[str, ...] = ()) -> eh.RunResult:
    return eh.run(_exe(variant), _variant(variant), payload, inputs, n_out, extra)


def _assert_exact(variant: str, case: pf.Case, extra: tuple[str, ...] = ()) -> None:
    ref = run_delegate(case.payload, case.inputs)
    r = _run(variant, case.payload, case.inputs, len(ref), extra)
    assert r.returncode == 0, f"{case.name}: exit {r.returncode}\n{r.stderr[-3000:]}"
    for k, (got, want) in enumerate(zip(r.outputs, _bytes(ref), strict=True)):
        if got != want:
            a = np.frombuffer(got, dtype=ref[k].dtype).reshape(ref[k].shape)
            bad = np.argwhere(a != ref[k])
            pytest.fail(f"{case.name} output {k}: {len(bad)} elements differ, first at "
                        f"{bad[0].tolist()}: engine {a[tuple(bad[0])]} reference "
                        f"{ref[k][tuple(bad[0])]}")


# ----------------------------------------------------------------------- differential


HOMED_CASES = [n for n in CASE_NAMES if n in ("conv_1x1", "conv_3x3_s2_odd", "add_both_broadcast", "upsample_x2")]


@pytest.mark.parametrize("name", HOMED_CASES)
def test_io_homes_bind_the_arena_and_give_the_same_outputs(name: str) -> None:
    """Payload 2.4: io tensors planned in the arena.  Left unbound (espnn_set_io(NULL)), the
    engine reads each input from its home and writes each output to its home; the input is
    written there again before each run (its bytes are reused once consumed) and the results
    are the reference's, run after run, under the 32-bit sanitizers."""
    case = _cases()[name]
    data = _homed(case.payload)
    p = decode(data)
    assert p.io_homes is not None and F.NO_HOME not in p.io_homes
    assert p.arena_size >= decode(case.payload).arena_size
    ref = run_delegate(data, case.inputs)
    r = _run("asan32", data, case.inputs, len(ref), ("--homes", "--repeat", "2"))
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-3000:]}"
    assert r.outputs == _bytes(ref)


@pytest.mark.parametrize("name", CASE_NAMES)
def test_engine_matches_reference(name: str) -> None:
    _assert_exact("host", _cases()[name])


@pytest.mark.parametrize("name", CASE_NAMES)
def test_engine_matches_reference_m32_sanitized(name: str) -> None:
    _assert_exact("asan32", _cases()[name])


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["host", "asan32"])
def test_mobilenet_v2_matches_reference(variant: str) -> None:
    _assert_exact(variant, pf.mobilenet_v2_case())


@pytest.mark.parametrize("name", ["float_conv_chain", "fc_3d", "upsample_odd", "dw_mult2_s2",
                                  "inplace_lut_reshape_fc"])
def test_constants_copy_and_repeated_invoke(name: str) -> None:
    """With a copy of the constants the payload is zeroed after init (the engine must not read
    it again); three invokes over the poisoned arena give the same bytes as one."""
    _assert_exact("asan64", _cases()[name], ("--copy-consts", "--repeat", "3"))


def test_misaligned_int32_constants_are_refused() -> None:
    case = _cases()["conv_1x1"]  # bias, mult and shift are int32 constants
    r = _run("asan64", case.payload, case.inputs, 1, ("--misalign", "2"))
    assert r.returncode == 2
    err = r.error_fields()
    assert (err["status"], err["field"]) == ("ESPNN_ERR_ALIGNMENT", "offset")
    assert "misaligned memory" in r.stderr


def test_int8_only_payload_runs_at_any_address() -> None:
    _assert_exact("asan64", _cases()["lut_tanh"], ("--misalign", "3"))


def test_input_size_mismatch_is_refused() -> None:
    case = _cases()["add_same"]
    short = [case.inputs[0][..., :-1], case.inputs[1]]
    r = _run("asan64", case.payload, short, 1)
    assert r.returncode == 3
    assert "ESPNN_ERR_IO" in r.stderr


# ----------------------------------------------------------------------- invalid payloads


def _encode_unchecked(p: Payload) -> bytes:
    """Encode without the writer's own validation, to build payloads it would refuse."""
    with mock.patch.object(writer, "decode", lambda data: None):
        return encode(p)


def _patch(data: bytes, offset: int, fmt: str, *values: object) -> bytes:
    b = bytearray(data)
    struct.pack_into(fmt, b, offset, *values)
    return bytes(b)


def _tensor_at(i: int) -> int:
    return F.HEADER_SIZE + F.TENSOR_RECORD_SIZE * i


def _ops_offset(data: bytes) -> int:
    return int(struct.unpack_from("<I", data, 36)[0])


def _const_value_at(data: bytes, tensor: int, index: int, size: int) -> int:
    p = decode(data, validate=False)
    const_off = int(struct.unpack_from("<I", data, 44)[0])
    return const_off + p.tensors[tensor].offset + index * size


def _conv() -> bytes:
    return _cases()["conv_1x1"].payload


def _lut_payload(**overrides: object) -> Payload:
    table = np.arange(-128, 128, dtype=np.int8)
    pool = writer.ConstantPool()
    off = pool.add(table.tobytes())
    p = Payload(
        tensors=[TensorRec(DType.INT8, (2, 8), Storage.INPUT, 0, 0.1, 0),
                 TensorRec(DType.INT8, (256,), Storage.CONST, off),
                 TensorRec(DType.INT8, (2, 8), Storage.ARENA, 0, 0.1, 0),
                 TensorRec(DType.INT8, (2, 8), Storage.OUTPUT, 0, 0.1, 0)],
        ops=[OpRec(Opcode.LUT, (0, 1), 2), OpRec(Opcode.LUT, (2, 1), 3)],
        inputs=[0], outputs=[3], constants=pool.bytes(), arena_size=16,
    )
    for k, v in overrides.items():
        setattr(p, k, v)
    return p


def _read_before_write() -> bytes:
    p = _lut_payload()
    p.ops = [OpRec(Opcode.LUT, (2, 1), 3), OpRec(Opcode.LUT, (0, 1), 2)]
    return _encode_unchecked(p)


def _partial_overlap() -> bytes:
    """A TRANSPOSE whose arena output overlaps its arena input by 8 bytes."""
    p = _lut_payload(arena_size=64)
    p.tensors[2] = TensorRec(DType.INT8, (2, 8), Storage.ARENA, 0, 0.1, 0)
    p.tensors.insert(3, TensorRec(DType.INT8, (8, 2), Storage.ARENA, 8, 0.1, 0))
    p.tensors[4] = TensorRec(DType.INT8, (8, 2), Storage.OUTPUT, 0, 0.1, 0)
    perm = {"perm0": 1, "perm1": 0, "perm2": 2, "perm3": 3}
    p.ops = [OpRec(Opcode.LUT, (0, 1), 2), OpRec(Opcode.TRANSPOSE, (2,), 3, perm),
             OpRec(Opcode.RESHAPE, (3,), 4)]
    p.outputs = [4]
    return _encode_unchecked(p)


def _scratch_over_input() -> bytes:
    p = _lut_payload(arena_size=64)
    p.ops[1].scratch_offset, p.ops[1].scratch_size = 0, 32
    return _encode_unchecked(p)


def _output_never_written() -> bytes:
    p = _lut_payload()
    p.tensors.append(TensorRec(DType.INT8, (2, 8), Storage.OUTPUT, 1, 0.1, 0))
    p.outputs.append(4)
    return _encode_unchecked(p)


def _second_tensor_on_input_buffer() -> bytes:
    """Tensor 4 claims delegate input 0 with 16x the bytes: reading it would overrun."""
    p = _lut_payload(arena_size=256)
    p.tensors.append(TensorRec(DType.INT8, (16, 16), Storage.INPUT, 0, 0.1, 0))
    p.tensors[2] = TensorRec(DType.INT8, (16, 16), Storage.ARENA, 0, 0.1, 0)
    p.tensors[3] = TensorRec(DType.INT8, (16, 16), Storage.OUTPUT, 0, 0.1, 0)
    p.ops = [OpRec(Opcode.LUT, (4, 1), 2), OpRec(Opcode.LUT, (2, 1), 3)]
    return _encode_unchecked(p)


def _wrapped_nbytes() -> bytes:
    """int32 dims 65535 x 65535 x 2: the computed 4 * product wraps to 0xFFF00008 in 32 bits."""
    data = encode(_lut_payload())
    at = _tensor_at(2)
    data = _patch(data, at + 0, "<BB", DType.INT32, 3)
    return _patch(data, at + 4, "<4H", 65535, 65535, 2, 1)


def _wrapped_to_zero_nbytes() -> bytes:
    """int8 dims 32768 x 32768 x 4: 2^32 bytes, 0 in 32 bits, which a parser that lets the
    product wrap would find inside any arena."""
    at = _tensor_at(2)
    data = _patch(encode(_lut_payload()), at + 1, "<B", 3)
    return _patch(data, at + 4, "<4H", 32768, 32768, 4, 1)


def _wrapped_arena_range() -> bytes:
    """offset + nbytes of an arena tensor wraps past 2^32 back inside the arena."""
    return _patch(encode(_lut_payload()), _tensor_at(2) + 12, "<I", 0xFFFF_FFF0)


def _shift_value(v: int) -> bytes:
    data = _conv()
    p = decode(data)
    shift_tid = p.ops[0].inputs[4]
    assert shift_tid is not None
    return _patch(data, _const_value_at(data, shift_tid, 0, 4), "<i", v)


def _filter_minus_128() -> bytes:
    data = _conv()
    filt = decode(data).ops[0].inputs[1]
    assert filt is not None
    return _patch(data, _const_value_at(data, filt, 3, 1), "<b", -128)


def _conv_params(case: str = "conv_1x1", **values: int) -> bytes:
    """A CONV2D case with some parameter words replaced (by name)."""
    data = _cases()[case].payload
    params_at = _ops_offset(data) + F.OP_HEADER_SIZE + 12  # 5 inputs + output, padded
    names = F.OP_SPECS[Opcode.CONV2D].params
    for name, v in values.items():
        data = _patch(data, params_at + 4 * names.index(name), "<i", v)
    return data


def _upsample_map_value(v: int) -> bytes:
    data = _cases()["upsample_x2"].payload
    ymap = decode(data).ops[0].inputs[1]
    assert ymap is not None
    return _patch(data, _const_value_at(data, ymap, 2, 4), "<i", v)


def _softmax_row(width: int) -> bytes:
    q = pf.QParams(0.05, 0)
    p = Payload(
        tensors=[TensorRec(DType.INT8, (1, width), Storage.INPUT, 0, q.scale, 0),
                 TensorRec(DType.INT8, (1, width), Storage.OUTPUT, 0, 1 / 256, -128)],
        ops=[OpRec(Opcode.SOFTMAX, (0,), 1, {"mult": 1 << 30, "shift": 20, "diff_min": -100})],
        inputs=[0], outputs=[1], constants=b"", arena_size=0,
    )
    return _encode_unchecked(p)


_homed = pf.homed


def _homes_at(data: bytes) -> int:
    p = decode(data)
    io_offset = int(struct.unpack_from("<I", data, 32)[0])
    n = len(p.inputs) + len(p.outputs)
    return io_offset + (2 * n + 3) // 4 * 4


def _home_value(v: int) -> bytes:
    data = _homed(_conv())
    return _patch(data, _homes_at(data), "<I", v)


InvalidCase = tuple[str, Callable[[], bytes], str, str]
INVALID: list[InvalidCase] = [
    ("truncated_header", lambda: _conv()[:40], "ESPNN_ERR_TRUNCATED", "header"),
    ("truncated_body", lambda: _conv()[:-1], "ESPNN_ERR_TRUNCATED", "total_size"),
    ("trailing_bytes", lambda: _conv() + b"\0", "ESPNN_ERR_INVALID", "total_size"),
    ("bad_magic", lambda: _patch(_conv(), 0, "<4s", b"ESNX"), "ESPNN_ERR_MAGIC", "magic"),
    ("major_1", lambda: _patch(_conv(), 4, "<H", 1), "ESPNN_ERR_VERSION", "format_version"),
    ("major_3", lambda: _patch(_conv(), 4, "<H", 3), "ESPNN_ERR_VERSION", "format_version"),
    ("minor_newer", lambda: _patch(_conv(), 6, "<H", F.FORMAT_MINOR + 1), "ESPNN_ERR_VERSION", "format_version"),
    ("unknown_target", lambda: _patch(_conv(), 11, "<B", 7), "ESPNN_ERR_INVALID", "target"),
    ("flags", lambda: _patch(_conv(), 16, "<I", 2), "ESPNN_ERR_INVALID", "flags"),
    ("io_homes_in_minor_3", lambda: _patch(_homed(_conv()), 6, "<H", 3), "ESPNN_ERR_INVALID", "flags"),
    ("io_home_misaligned", lambda: _home_value(8), "ESPNN_ERR_INVALID", "io_homes"),
    ("io_home_past_arena", lambda: _home_value(0x7FFF_FFF0), "ESPNN_ERR_INVALID", "io_homes"),
    ("zero_tensors", lambda: _patch(_conv(), 20, "<H", 0), "ESPNN_ERR_INVALID", "n_tensors"),
    ("too_many_tensors", lambda: _patch(_conv(), 20, "<H", 4097), "ESPNN_ERR_INVALID",
     "n_tensors"),
    ("too_many_ops", lambda: _patch(_conv(), 22, "<H", 5000), "ESPNN_ERR_INVALID", "n_ops"),
    ("too_many_inputs", lambda: _patch(_conv(), 24, "<H", 33), "ESPNN_ERR_INVALID", "n_inputs"),
    ("const_offset", lambda: _patch(_conv(), 44, "<I", 0xFFFF_FFF0), "ESPNN_ERR_INVALID",
     "const_offset"),
    ("dim_zero", lambda: _patch(_conv(), _tensor_at(0) + 6, "<H", 0), "ESPNN_ERR_INVALID",
     "dims[1]"),
    ("unused_dim_not_1", lambda: _patch(encode(_lut_payload()), _tensor_at(0) + 8, "<H", 2),
     "ESPNN_ERR_INVALID", "dims[2]"),
    ("wrapped_nbytes", _wrapped_nbytes, "ESPNN_ERR_INVALID", "nbytes"),
    ("nbytes_wraps_to_zero", _wrapped_to_zero_nbytes, "ESPNN_ERR_INVALID", "nbytes"),
    ("wrapped_arena_range", _wrapped_arena_range, "ESPNN_ERR_INVALID", "offset"),
    ("const_past_end", lambda: _patch(encode(_lut_payload()), _tensor_at(1) + 12, "<I", 0x100),
     "ESPNN_ERR_INVALID", "offset"),
    ("nan_scale", lambda: _patch(_conv(), _tensor_at(0) + 16, "<I", 0x7FC0_0000),
     "ESPNN_ERR_INVALID", "scale"),
    ("unknown_opcode", lambda: _patch(_conv(), _ops_offset(_conv()), "<H", 99),
     "ESPNN_ERR_INVALID", "opcode"),
    ("record_size", lambda: _patch(_conv(), _ops_offset(_conv()) + 6, "<H", 20),
     "ESPNN_ERR_INVALID", "record_size"),
    ("input_id_past_table", lambda: _patch(_conv(), _ops_offset(_conv()) + 16, "<H", 4000),
     "ESPNN_ERR_INVALID", "inputs[0]"),
    ("read_before_write", _read_before_write, "ESPNN_ERR_INVALID", "inputs[0]"),
    ("partial_overlap", _partial_overlap, "ESPNN_ERR_INVALID", "inputs[0]"),
    ("scratch_over_input", _scratch_over_input, "ESPNN_ERR_INVALID", "scratch_offset"),
    ("output_never_written", _output_never_written, "ESPNN_ERR_INVALID", "outputs"),
    ("second_tensor_on_input", _second_tensor_on_input_buffer, "ESPNN_ERR_INVALID", "offset"),
    ("shift_positive", lambda: _shift_value(1), "ESPNN_ERR_INVALID", "shift"),
    ("shift_below_min", lambda: _shift_value(-32), "ESPNN_ERR_INVALID", "shift"),
    ("filter_minus_128", _filter_minus_128, "ESPNN_ERR_INVALID", "filter"),
    ("stride_zero", lambda: _conv_params(stride_h=0), "ESPNN_ERR_INVALID", "stride_h"),
    ("groups_not_divisor", lambda: _conv_params(groups=3), "ESPNN_ERR_INVALID", "groups"),
    ("in_offset_range", lambda: _conv_params(in_offset=129), "ESPNN_ERR_INVALID", "in_offset"),
    ("act_inverted", lambda: _conv_params(act_min=100, act_max=50), "ESPNN_ERR_INVALID",
     "act_min"),
    ("kernel_past_padded_input", lambda: _conv_params("conv_3x3_s2_odd", dilation_h=7), "ESPNN_ERR_INVALID",
     "filter"),
    ("upsample_map_past_input", lambda: _upsample_map_value(4), "ESPNN_ERR_INVALID", "y_map"),
    ("upsample_map_negative", lambda: _upsample_map_value(-1), "ESPNN_ERR_INVALID", "y_map"),
    ("softmax_row_4096", lambda: _softmax_row(4096), "ESPNN_ERR_INVALID", "input"),
]


@pytest.mark.parametrize(("name", "make", "status", "field"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_payload(name: str, make: Callable[[], bytes], status: str, field: str) -> None:
    data = make()
    with pytest.raises(PayloadError) as py:
        decode(data)
    assert py.value.field == field, f"Python reader names {py.value.field!r}"
    r = _run("asan64", data, [], 0)
    assert r.returncode == 2, f"exit {r.returncode}\n{r.stderr[-3000:]}"
    err = r.error_fields()
    assert (err["status"], err["field"]) == (status, field)
    assert f"field '{field}'" in r.stderr and r.stderr.isascii()


def test_invalid_payloads_under_m32_sanitizers() -> None:
    """The same corruptions with 32-bit size_t: same verdicts, no sanitizer report."""
    datas = [make() for _, make, _, _ in INVALID]
    got = eh.check_many(_exe("asan32"), eh.ASAN32, datas)
    assert [(v.status, v.field) for v in got] == [(s, f) for _, _, s, f in INVALID]


def test_format_1_payload_is_refused_naming_both_versions() -> None:
    """Format 2.0 changed the tensor record (40 -> 24 bytes): a 1.x payload must not be
    parsed with the new layout, and the message says which version it has and which the
    engine reads."""
    r = _run("asan64", _patch(_conv(), 4, "<HH", 1, 0), [], 0)
    assert r.returncode == 2, r.stderr[-3000:]
    assert r.error_fields()["status"] == "ESPNN_ERR_VERSION"
    assert f"field 'format_version' = 1.0 (this engine reads 2.{F.FORMAT_MINOR})" in r.stderr


def test_softmax_row_4095_is_accepted() -> None:
    decode(_softmax_row(4095))
    assert eh.check_many(_exe("asan64"), eh.ASAN64, [_softmax_row(4095)])[0].status == "ESPNN_OK"


# ----------------------------------------------------------------------- target and scratch


def _for_chip(data: bytes, target: Target, scratch: int) -> bytes:
    """The payload as lowered for ``target``: every op gets ``scratch`` bytes of its own."""
    p = decode(data)
    p.target = target
    for op in p.ops:
        op.scratch_offset, op.scratch_size = (p.arena_size + 15) // 16 * 16, scratch
        p.arena_size = op.scratch_offset + scratch
    return encode(p)


def _s3_need(data: bytes) -> int:
    """The largest scratch an op of the payload needs on the S3 (the lowering's rule)."""
    p = decode(data)
    return max(op_scratch(p, i, Target.ESP32S3) for i in range(len(p.ops)))


def test_payload_short_of_esp_nn_scratch_is_refused() -> None:
    """A generic payload (ANSI scratch: none) on an ESP32-S3 build: softmax needs what ESP-NN's
    size function asks (64 bytes in this build) and is refused without it."""
    case = _cases()["softmax_rows"]
    r = _run("chip", case.payload, case.inputs, 1)
    assert r.returncode == 2, r.stderr
    err = r.error_fields()
    assert (err["status"], err["field"], err["op"], err["value"], err["limit"]) == (
        "ESPNN_ERR_TARGET", "scratch_size", "0", "0", "64")
    assert "another target or ESP-NN version" in r.stderr


def test_convolutions_without_scratch_take_the_ansi_kernel_on_an_s3_build() -> None:
    """scratch_size 0 on a convolution the S3 kernels would need scratch for is the RAM-first
    choice (custom_executorch_optimize = ram, executorch_espnn.kernel_choice): the S3 build runs
    ESP-NN's ANSI kernel instead of refusing, with the same bytes as the host build."""
    for name in ("conv_1x1", "dw_mult1"):
        case = _cases()[name]
        assert _s3_need(case.payload) > 0, name  # the fast kernel would touch scratch here
        _assert_exact("chip", case)


def test_payload_one_byte_short_of_touched_scratch_is_refused() -> None:
    for name in ("conv_1x1", "conv_3x3_s2_odd", "conv_ch_not_mult8", "dw_mult1"):
        case = _cases()[name]
        need = _s3_need(case.payload)
        r = _run("chip", _for_chip(case.payload, Target.ESP32S3, need - 1), case.inputs, 1)
        err = r.error_fields()
        assert (r.returncode, err["field"], err["value"], err["limit"]) == (
            2, "scratch_size", str(need - 1), str(need)), name


BAND_CASES = ("dw_bands_pad1", "dw_bands_s2_odd", "dw_bands_nopad_s2")


@pytest.mark.parametrize("rows", [1, 2, 3])
def test_depthwise_bands_run_exactly_on_an_s3_build(rows: int) -> None:
    """A bandable depthwise given a band's scratch, less than the whole map's (what the speed
    lowering does where that scratch sets the peak): the S3 build, which refuses a short
    whole-map scratch, runs it in bands of padded rows with the reference's bytes; the batch,
    stride 2 with odd sizes, padding 0 and a short last band are among the cases."""
    for name in BAND_CASES:
        case = _cases()[name]
        data, n = banded(case.payload, rows)
        assert n == 1, name
        p = decode(data)
        assert p.ops[0].scratch_size < _s3_need(case.payload), name
        _assert_exact("chip", pf.Case(name, data, case.inputs, None))


def test_payload_one_byte_short_of_one_band_is_refused() -> None:
    """Below the smallest band the payload is refused, naming what one output row's band takes."""
    from executorch_espnn.payload_peak import conv_geometry
    from executorch_espnn.scratch import depthwise_band_scratch

    for name in BAND_CASES:
        case = _cases()[name]
        p = decode(case.payload)
        g = conv_geometry(p, 0)
        assert g is not None
        one = depthwise_band_scratch(Target.ESP32S3, g, 1)
        r = _run("chip", _for_chip(case.payload, Target.ESP32S3, one - 1), case.inputs, 1)
        err = r.error_fields()
        assert (r.returncode, err["field"], err["value"], err["limit"]) == (
            2, "scratch_size", str(one - 1), str(one)), name
        assert "another target or ESP-NN version" in r.stderr


def test_payload_for_this_chip_runs_with_its_scratch() -> None:
    for name in ("conv_1x1", "dw_mult1", "softmax_rows", "conv_groups4_16to16", "conv_3x3_s2_odd"):
        case = _cases()[name]
        data = _for_chip(case.payload, Target.ESP32S3, max(64, _s3_need(case.payload)))
        _assert_exact("chip", pf.Case(name, data, case.inputs, None))


def test_payload_for_another_chip_is_refused() -> None:
    case = _cases()["conv_1x1"]
    data = _for_chip(case.payload, Target.ESP32, 64)
    decode(data)  # valid as such: only a runtime built for one chip knows it cannot run it
    r = _run("chip", data, case.inputs, 1)
    err = r.error_fields()
    assert (r.returncode, err["status"], err["field"]) == (2, "ESPNN_ERR_TARGET", "target")
    # the host simulator needs no scratch and runs every target's payloads
    _assert_exact("host", pf.Case("conv_1x1_esp32", data, case.inputs, None))


# ----------------------------------------------------------------------- random mutations

MUTATION_CASES = ["conv_3x3_s2_odd", "conv_groups4_16to16", "dw_mult2_s2", "fc_3d",
                  "add_both_broadcast", "mul_per_channel", "avgpool_ceil_include_pad",
                  "maxpool_ceil", "mean_hw", "softmax_3d", "quantize_nchw_to_nhwc",
                  "slice_steps", "concat_channels", "pad_hw", "upsample_odd",
                  "inplace_lut_reshape_fc", "float_conv_chain", "transpose_f32"]
MUTANTS_PER_CASE = 120


def _mutate(data: bytes, rng: random.Random) -> bytes:
    """One corruption, mostly of the structure (header, tables, op records), sometimes of the
    constants; small values are favoured so mutants often stay valid or nearly so."""
    b = bytearray(data)
    kind = rng.random()
    if kind < 0.05 or len(b) < 64:
        return bytes(b[: rng.randrange(max(len(b), 1))])
    # the structure ends where the constants start (as long as that field is sane)
    const_off = min(max(int(struct.unpack_from("<I", data, 44)[0]), 64), len(b))
    lo, hi = (0, const_off) if kind < 0.85 or const_off >= len(b) else (const_off, len(b))
    pos = rng.randrange(lo, hi)
    width = rng.choice((1, 1, 2, 4))
    pos = min(pos, len(b) - width)
    value = rng.choice((0, 1, 2, 3, 4, 16, 127, 128, 255, 0xFFFF, 0xFFFF_FFFF, 0x8000_0000,
                        rng.randrange(1 << (8 * width))))
    if rng.random() < 0.5:
        old = int.from_bytes(b[pos : pos + width], "little")
        value = old + rng.choice((-1, 1, -16, 16))
    value &= (1 << (8 * width)) - 1
    b[pos : pos + width] = value.to_bytes(width, "little")
    return bytes(b)


def _python_accepts(data: bytes) -> bool:
    try:
        decode(data)
    except PayloadError:
        return False
    return True


def _zero_inputs(data: bytes) -> list[Array]:
    p = decode(data)
    return [np.zeros(p.tensors[t].dims, dtype=p.tensors[t].dtype.numpy_name) for t in p.inputs]


def test_random_mutations_agree_with_python_reader() -> None:
    rng = random.Random(20261130)
    mutants: list[bytes] = []
    for name in MUTATION_CASES:
        base = _cases()[name].payload
        mutants += [_mutate(base, rng) for _ in range(MUTANTS_PER_CASE)]
    verdicts = eh.check_many(_exe("asan64"), eh.ASAN64, mutants)
    disagree = []
    accepted = []
    for i, (data, v) in enumerate(zip(mutants, verdicts, strict=True)):
        py = _python_accepts(data)
        if py != (v.status == "ESPNN_OK"):
            disagree.append((i, py, v))
        elif py:
            accepted.append(data)
    assert not disagree, f"{len(disagree)} of {len(mutants)} disagree, e.g. {disagree[:5]}"
    rejected = len(mutants) - len(accepted)
    assert rejected > len(mutants) // 3 and len(accepted) > 50, (rejected, len(accepted))
    # what both accept must also run, and to the reference's bytes (on zero inputs)
    for data in rng.sample(accepted, 60):
        inputs = _zero_inputs(data)
        ref = run_delegate(data, inputs)
        r = _run("asan64", data, inputs, len(ref))
        assert r.returncode == 0, r.stderr[-3000:]
        assert r.outputs == _bytes(ref)


# ----------------------------------------------------------------------- state size


@pytest.mark.parametrize("variant", ["host", "m32"])
def test_state_bytes_formula_matches_engine(variant: str) -> None:
    seen: set[Opcode] = set()
    for name in CASE_NAMES:
        data = _cases()[name].payload
        p = decode(data)
        seen |= {op.opcode for op in p.ops}
        info = eh.inspect(_exe(variant), _variant(variant), data)
        assert int(info["state_bytes"]) == state_bytes(p), name
    assert seen == set(Opcode) == set(F.OP_SPECS), "every op family's state size is checked"


def _consts_first(p: Payload) -> list[int]:
    """The order that keeps the most full records: every constant ahead of the activations."""
    return sorted(range(len(p.tensors)), key=lambda i: p.tensors[i].storage != Storage.CONST)


@pytest.mark.parametrize("variant", ["host", "m32"])
def test_constants_last_shrinks_the_state_and_runs_alike(variant: str) -> None:
    """The lowering's order (payload/order.py) against the worst one: every case renumbered
    constants-first, then constants-last.  Constants-last decodes with its constants after
    every other tensor and a state 16 bytes smaller per constant (a 20-byte record becomes a
    4-byte offset); in both orders espnn_inspect agrees with the formula and the engine's
    outputs equal the reference's on the factory's own order."""
    shrunk = 0
    for name in CASE_NAMES:
        case = _cases()[name]
        ref = run_delegate(case.payload, case.inputs)
        first = decode(case.payload)
        renumber(first, _consts_first(first))
        n_consts = sum(t.storage == Storage.CONST for t in first.tensors)
        last = decode(encode(first))
        new_id = constants_last(last)
        kinds = [t.storage == Storage.CONST for t in last.tensors]
        assert kinds == sorted(kinds), f"{name}: a constant before an activation"
        for old, new in new_id.items():  # the same tensor under its new id
            assert last.tensors[new] == first.tensors[old], name
        saved = state_bytes(first) - state_bytes(last)
        assert saved == (F.STATE_TENSOR_BYTES - F.STATE_CONST_BYTES) * n_consts, name
        shrunk += saved > 0
        for p in (first, last):
            data = encode(p)
            info = eh.inspect(_exe(variant), _variant(variant), data)
            assert int(info["state_bytes"]) == state_bytes(p), name
            r = _run(variant, data, case.inputs, len(ref))
            assert r.returncode == 0, f"{name}: {r.stderr[-2000:]}"
            assert r.outputs == _bytes(ref), name
    assert shrunk > len(CASE_NAMES) // 2, "most cases have constants"


# ----------------------------------------------------------------------- real ESP-NN


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("ESPNN_ESP_NN_DIR"),
                    reason="set ESPNN_ESP_NN_DIR to an espressif/esp-nn checkout (e.g. "
                    "`git -C <mirror> archive HEAD | tar -x -C /tmp/esp-nn`) to compare the "
                    "host kernels with ESP-NN's own ANSI kernels")
def test_host_kernels_match_real_esp_nn() -> None:
    v = eh.esp_nn_variant(Path(os.environ["ESPNN_ESP_NN_DIR"]))
    exe = eh.build(v)
    for case in [*_cases().values(), pf.mobilenet_v2_case()]:
        ref = run_delegate(case.payload, case.inputs)
        real = eh.run(exe, v, case.payload, case.inputs, len(ref))
        ours = _run("host", case.payload, case.inputs, len(ref))
        assert real.returncode == 0 and ours.returncode == 0, (case.name, real.stderr)
        assert real.outputs == ours.outputs == _bytes(ref), case.name


# ----------------------------------------------------------------------- portability


def _all_c_sources() -> list[Path]:
    lists = component_sources.load(eh.COMPONENT)
    return sorted([*lists.engine_srcs, *lists.host_kernel_srcs])


@pytest.mark.skipif(shutil.which("clang-14") is None, reason="needs clang-14")
def test_engine_compiles_warning_free_with_clang(tmp_path: Path) -> None:
    inc = ["-I", str(eh.ENGINE / "include"), "-I", str(eh.ENGINE / "src"),
           "-I", str(eh.HOST_ESPNN / "include")]
    for src in [*_all_c_sources(), *component_sources.load(eh.COMPONENT).run_srcs]:
        r = subprocess.run(["clang-14", *eh.WARNINGS, "-O2", "-DESPNN_HOST_STRICT", *inc, "-c",
                            str(src), "-o", str(tmp_path / "x.o")],
                           capture_output=True, text=True, check=False)
        assert r.returncode == 0, f"{src.name}:\n{r.stderr}"


def _xtensa_clang() -> list[str] | None:
    from devkit import real_builders as rb

    found = rb.xtensa_compilers("xtensa-esp32-elf")
    return found[0]["gcc"] if found else None


@pytest.mark.skipif(_xtensa_clang() is None,
                    reason="needs clang-22 (its Xtensa backend) and Debian's newlib headers")
def test_engine_compiles_warning_free_for_xtensa(tmp_path: Path) -> None:
    """The ESP32/S3's windowed ABI as the real-builder tests compile it (devkit/real_builders.py
    xtensa_compilers: clang-22, newlib's headers): the engine, the host kernels and the
    runtime's C, warning-free with -Wall -Wextra -Werror through code generation (-S).  -O2,
    else -O0 where LLVM 22's Xtensa backend dies (rb.XTENSA_CRASHES: add.c's 16-argument
    ESP-NN call): a compiler bug, not a diagnostic."""
    from devkit import real_builders as rb

    clang = _xtensa_clang()
    assert clang is not None
    inc = ["-I", str(eh.ENGINE / "include"), "-I", str(eh.ENGINE / "src"),
           "-I", str(eh.HOST_ESPNN / "include")]
    sources = [*_all_c_sources(), *component_sources.load(eh.COMPONENT).run_srcs]
    for src in sources:
        cmd = [*clang, *eh.WARNINGS, "-DESPNN_HOST_STRICT", *inc, "-S", str(src), "-o",
               str(tmp_path / "x.s")]
        r = subprocess.run([*cmd, "-O2"], capture_output=True, text=True, check=False)
        if r.returncode and any(m in r.stderr for m in rb.XTENSA_CRASHES):
            r = subprocess.run([*cmd, "-O0"], capture_output=True, text=True, check=False)
        assert r.returncode == 0 and not r.stderr, f"{src.name}:\n{r.stderr}"
        text = (tmp_path / "x.s").read_text()  # windowed-ABI functions: entry, retw
        assert "@function" not in text or ("\tentry\ta1, " in text and "\tretw" in text), src.name
    assert len(sources) > 30


@pytest.mark.skipif(shutil.which("riscv64-unknown-elf-gcc") is None,
                    reason="needs riscv64-unknown-elf-gcc with picolibc")
def test_engine_is_freestanding(tmp_path: Path) -> None:
    """Bare-metal rv32imac: the engine and host kernels need nothing from libc but
    memcpy/memset/memmove, and from libgcc only arithmetic helpers."""
    inc = ["-I", str(eh.ENGINE / "include"), "-I", str(eh.ENGINE / "src"),
           "-I", str(eh.HOST_ESPNN / "include")]
    objs = []
    for i, src in enumerate(_all_c_sources()):
        obj = tmp_path / f"{i}.o"
        r = subprocess.run(["riscv64-unknown-elf-gcc", "--specs=picolibc.specs", "-march=rv32imac",
                            "-mabi=ilp32", "-Os", *eh.WARNINGS, *inc, "-c", str(src), "-o",
                            str(obj)], capture_output=True, text=True, check=False)
        assert r.returncode == 0, f"{src.name}:\n{r.stderr}"
        objs.append(str(obj))
    merged = tmp_path / "engine.o"
    subprocess.run(["riscv64-unknown-elf-ld", "-m", "elf32lriscv", "-r", *objs, "-o", str(merged)],
                   check=True)
    nm = subprocess.run(["riscv64-unknown-elf-nm", "-u", str(merged)], capture_output=True,
                        text=True, check=True)
    undefined = {line.split()[-1] for line in nm.stdout.splitlines() if line.strip()}
    helpers = re.compile(r"__(\w+)(di3|si3|sf2|sf3|sfsi|sisf)")
    libc = undefined - {s for s in undefined if helpers.fullmatch(s)}
    assert libc <= {"memcpy", "memset", "memmove"}, sorted(libc)


# ------------------------------------------------------------ an opcode of a newer format

def test_an_opcode_newer_than_the_payload_format_is_refused_by_both_readers() -> None:
    """A new opcode comes with a format minor (``OpSpec.since_minor``; see
    docs/adding-an-operator.md): a payload of an older minor that uses it is refused, naming
    'opcode', by the Python reader and by the C parser built from the generated tables.
    PRELU came with 2.1: a PRELU payload relabelled 2.0."""
    case = _cases()["prelu_single"]
    assert F.OP_SPECS[Opcode.PRELU].since_minor == 1
    data = _patch(case.payload, 6, "<H", 0)
    with pytest.raises(PayloadError, match=r"field 'opcode': PRELU needs format 2\.1, payload is 2\.0"):
        decode(data)
    r = _run("host", data, case.inputs, 1)
    assert r.returncode == 2, (r.stdout, r.stderr)
    err = r.error_fields()
    assert (err["field"], err["opcode"], err["value"], err["limit"]) == ("opcode", str(int(Opcode.PRELU)), "0", "1"), err


def test_div_payload_relabelled_2_2_is_refused_by_both_readers() -> None:
    """DIV came with 2.3 (division by a tensor): a DIV payload of minor 2 is refused."""
    case = _cases()["div_row_broadcast"]
    assert F.OP_SPECS[Opcode.DIV].since_minor == 3
    data = _patch(case.payload, 6, "<H", 2)
    with pytest.raises(PayloadError, match=r"field 'opcode': DIV needs format 2\.3, payload is 2\.2"):
        decode(data)
    r = _run("host", data, case.inputs, 1)
    assert r.returncode == 2, (r.stdout, r.stderr)
    err = r.error_fields()
    assert (err["field"], err["opcode"], err["value"], err["limit"]) == ("opcode", str(int(Opcode.DIV)), "2", "3"), err


def test_an_opcode_of_the_next_minor_is_refused_by_both_readers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same rule for the minor after this one, whatever it will bring: simulated on LUT,
    as if it had come with the next minor, against a LUT payload of the current minor."""
    import dataclasses

    from executorch_espnn.payload import ctables

    now, later = F.FORMAT_MINOR, F.FORMAT_MINOR + 1
    case = _cases()["lut_sigmoid"]  # encoded (and validated) before the spec changes
    monkeypatch.setitem(F.OP_SPECS, Opcode.LUT, dataclasses.replace(F.OP_SPECS[Opcode.LUT], since_minor=later))
    with pytest.raises(PayloadError, match=rf"field 'opcode': LUT needs format 2\.{later}, payload is 2\.{now}"):
        decode(case.payload)
    registry = tmp_path / "registry.c"
    registry.write_text(ctables.render()["espnn_component/engine/src/registry.c"])
    assert f".since_minor = {later}" in registry.read_text()
    exe = eh.build(eh.HOST, replace={"src/registry.c": registry})
    r = eh.run(exe, eh.HOST, case.payload, case.inputs, 1)
    assert r.returncode == 2, (r.stdout, r.stderr)
    err = r.error_fields()
    assert (err["field"], err["opcode"], err["value"], err["limit"]) == (
        "opcode", str(int(Opcode.LUT)), str(now), str(later)), err
