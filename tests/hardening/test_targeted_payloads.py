"""Hostile payloads aimed at 32-bit arithmetic, alignment, bounds, dataflow, versions, limits.

Each case edits one or two fields of a golden payload (``surgery.Surgeon``) so that a check
written with naive 32-bit arithmetic would pass it (a product, sum or offset that wraps) or
so that it breaks one rule of ``docs/payload-format.md``.  The expected status and field come
from the spec.  Every case must be rejected with exactly that field:

- by the C engine built with ``gcc -m32`` (32-bit ``size_t``) and 64-bit, both under ASan and
  UBSan, reading the payload from an exact-size buffer (``fuzz/replay_main.c --verdicts``,
  which also pushes each case through the fuzz harness's init/invoke path, so any
  out-of-bounds access fails the run);
- by the Python reader (``executorch_espnn.payload.decode``), with the same field.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from devkit.payload_factory import all_cases
from executorch_espnn.payload import Opcode, PayloadError, decode
from executorch_espnn.payload.format import FORMAT_MINOR
from fuzz import build
from tests.hardening.surgery import Surgeon

Edit = Callable[[Surgeon], Surgeon]


@functools.cache
def _golden() -> dict[str, bytes]:
    return {c.name: c.payload for c in all_cases(seed=0)}


@dataclass(frozen=True)
class Targeted:
    name: str
    base: str  # a payload_factory case
    edit: Edit
    status: str  # the engine's espnn_status_t name
    field: str  # the field both the engine and the Python reader name
    op: int = -1
    tensor: int = -1

    def payload(self) -> bytes:
        return self.edit(Surgeon.of(_golden()[self.base])).bytes()


INVALID = "ESPNN_ERR_INVALID"
U32 = 1 << 32


def _truncate(n: int) -> Edit:
    def cut(s: Surgeon) -> Surgeon:
        del s.data[n:]
        return s
    return cut


def _wrap_ops_end(s: Surgeon) -> Surgeon:
    # ops_offset + ops_size == 2^32 + 16: in 32 bits the ops "end" at 16, so constants at 16
    # pass a naive check, and a naive parser then walks op records through 4 GiB
    total = s.get_header("total_size")
    return (s.header("ops_size", U32 - s.get_header("ops_offset") + 16)
            .header("const_offset", 16).header("const_size", total - 16))


def _wrap_const_end(s: Surgeon) -> Surgeon:
    # const_offset + const_size == 2^32 + total_size: equal to total_size in 32 bits
    total = s.get_header("total_size")
    return (s.header("ops_size", U32 - 16 - s.get_header("ops_offset"))
            .header("const_offset", U32 - 16).header("const_size", total + 16))


def _grow_arena(n: int) -> Edit:
    return lambda s: s.header("arena_size", n)


CASES: list[Targeted] = [
    # --- sizes that wrap in 32 bits -------------------------------------------------------
    Targeted("int8_count_wraps", "lut_gelu",
             lambda s: s.dims(2, (65535, 65535, 65535, 65535), rank=4), INVALID, "nbytes",
             tensor=2),
    Targeted("int32_count_times_esize_wraps_to_zero", "conv_1x1",
             lambda s: s.dims(3, (32768, 32768, 4, 1), rank=3), INVALID, "nbytes", tensor=3),
    Targeted("float32_count_times_esize_wraps", "quantize_nchw_to_nhwc",
             lambda s: s.dims(0, (65535, 65535, 3, 4)), INVALID, "nbytes", tensor=0),
    Targeted("arena_offset_plus_nbytes_wraps", "inplace_lut_reshape_fc",
             lambda s: s.tensor(1, "offset", U32 - 16), INVALID, "offset", tensor=1),
    Targeted("const_offset_plus_nbytes_wraps", "conv_1x1",
             lambda s: s.tensor(3, "offset", U32 - 16), INVALID, "offset", tensor=3),
    Targeted("scratch_range_wraps", "inplace_lut_reshape_fc",
             lambda s: s.op(3, "scratch_offset", U32 - 16).op(3, "scratch_size", 32),
             INVALID, "scratch_offset", op=3),
    Targeted("ops_section_end_wraps", "conv_1x1", _wrap_ops_end, INVALID, "const_offset"),
    Targeted("const_section_end_wraps", "conv_1x1", _wrap_const_end, INVALID, "const_size"),
    Targeted("slice_step_times_dim_wraps", "slice_steps",
             lambda s: s.param(0, "step1", 0x7FFFFFFF), INVALID, "step1", op=0),
    Targeted("slice_last_index_past_input", "slice_steps",
             lambda s: s.param(0, "step1", 65535), INVALID, "start1", op=0),
    Targeted("pad_sum_wraps", "pad_hw",
             lambda s: s.param(0, "before1", 0x7FFFFFFF).param(0, "after1", 0x7FFFFFFF),
             INVALID, "before1", op=0),
    Targeted("upsample_output_size_wraps", "upsample_x2",
             lambda s: s.dims(1, (1, 65535, 65535, 3)), INVALID, "nbytes", tensor=1),
    Targeted("upsample_map_longer_than_output", "upsample_x2",
             lambda s: s.dims(2, (9, 1, 1, 1)), INVALID, "y_map", op=0),
    Targeted("upsample_map_index_past_input", "upsample_x2",
             lambda s: s.const_i32(2, 7, 4), INVALID, "y_map", op=0),
    Targeted("upsample_map_index_negative", "upsample_x2",
             lambda s: s.const_i32(3, 0, -1), INVALID, "x_map", op=0),
    # --- format 2.1 ops: the fields that keep their arithmetic and indexing in bounds ------
    Targeted("sub_multiplier_int32_min", "sub_same",
             lambda s: s.param(0, "b_mult", -(1 << 31)), INVALID, "b_mult", op=0),
    Targeted("sub_output_multiplier_negative", "sub_same",
             lambda s: s.param(0, "out_mult", -5), INVALID, "out_mult", op=0),
    Targeted("prelu_alpha_not_per_channel", "prelu_per_channel",
             lambda s: s.dims(2, (5, 1, 1, 1)), INVALID, "alpha", op=0),
    Targeted("prelu_neg_mult_shorter_than_alpha", "prelu_per_channel",
             lambda s: s.dims(3, (5, 1, 1, 1)), INVALID, "neg_mult", op=0),
    Targeted("prelu_neg_shift_left_past_14", "prelu_single",
             lambda s: s.const_i32(4, 0, 15), INVALID, "neg_shift", op=0),
    Targeted("prelu_pos_shift_left_past_14", "prelu_single",
             lambda s: s.param(0, "pos_shift", 15), INVALID, "pos_shift", op=0),
    Targeted("prelu_output_of_other_shape", "prelu_single",
             lambda s: s.dims(1, (1, 7, 3, 5)), INVALID, "output", op=0),
    # --- format 2.3: DIV's per-divisor-code table and its operands ---------------------------
    Targeted("div_mult_int32_min", "div_row_broadcast",
             lambda s: s.const_i32(3, 5, -(1 << 31)), INVALID, "mult", op=0),
    Targeted("div_shift_left_past_14", "div_row_broadcast",
             lambda s: s.const_i32(4, 0, 15), INVALID, "shift", op=0),
    Targeted("div_shift_right_past_31", "div_row_broadcast",
             lambda s: s.const_i32(4, 255, -32), INVALID, "shift", op=0),
    Targeted("div_table_shorter_than_256_codes", "div_row_broadcast",
             lambda s: s.dims(3, (255, 1, 1, 1)), INVALID, "mult", op=0),
    Targeted("div_shift_table_of_128_codes", "div_row_broadcast",
             lambda s: s.dims(4, (128, 1, 1, 1)), INVALID, "shift", op=0),
    Targeted("div_divisor_that_does_not_broadcast", "div_row_broadcast",
             lambda s: s.dims(1, (2, 3, 6, 2)), INVALID, "b", op=0),
    Targeted("div_numerator_offset_past_128", "div_row_broadcast",
             lambda s: s.param(0, "a_offset", 129), INVALID, "a_offset", op=0),
    Targeted("bilinear_row_index_past_input", "bilinear_x2",
             lambda s: s.const_i32(2, 7, 4), INVALID, "y_index", op=0),
    Targeted("bilinear_column_weight_above_one", "bilinear_x2",
             lambda s: s.const_i32(5, 3, 2049), INVALID, "x_frac", op=0),
    Targeted("bilinear_weight_negative", "bilinear_x2",
             lambda s: s.const_i32(3, 0, -1), INVALID, "y_frac", op=0),
    Targeted("bilinear_table_shorter_than_output", "bilinear_x2",
             lambda s: s.dims(4, (9, 1, 1, 1)), INVALID, "x_index", op=0),
    Targeted("bilinear_requantises", "bilinear_x2",
             lambda s: s.tensor(1, "zero_point", 5), INVALID, "output", op=0),
    Targeted("tconv_output_padding_not_below_stride", "tconv_s2_p1_op1",
             lambda s: s.param(0, "out_pad_h", 2), INVALID, "out_pad_h", op=0),
    Targeted("tconv_output_size_off_by_one", "tconv_s2_p1_op1",
             lambda s: s.param(0, "pad_bottom", 2), INVALID, "output", op=0),
    Targeted("tconv_huge_dilation_stride", "tconv_s2_p1_op1",
             lambda s: s.param(0, "dilation_h", 65535).param(0, "stride_h", 65535), INVALID, "output", op=0),
    Targeted("tconv_groups_do_not_divide", "tconv_s2_p1_op1",
             lambda s: s.param(0, "groups", 2), INVALID, "groups", op=0),
    Targeted("layer_norm_gamma_shift_past_31", "layer_norm_rows",
             lambda s: s.param(0, "gamma_shift", 32), INVALID, "gamma_shift", op=0),
    Targeted("layer_norm_eps_past_2_61", "layer_norm_rows",
             lambda s: s.param(0, "eps_hi", 1 << 29), INVALID, "eps_hi", op=0),
    Targeted("layer_norm_gamma_shorter_than_row", "layer_norm_rows",
             lambda s: s.dims(2, (31, 1, 1, 1)), INVALID, "gamma", op=0),
    Targeted("layer_norm_beta_wrong_dtype", "layer_norm_rows",
             lambda s: s.tensor(3, "dtype", 1), INVALID, "beta", op=0),
    Targeted("layer_norm_output_of_another_shape", "layer_norm_rows",
             lambda s: s.dims(1, (8, 16, 1, 1)), INVALID, "output", op=0),
    Targeted("matmul_depth_mismatch", "matmul_3d",
             lambda s: s.dims(1, (2, 6, 4, 1), rank=3), INVALID, "b", op=0),
    Targeted("matmul_batch_neither_1_nor_the_output", "matmul_3d",
             lambda s: s.dims(2, (4, 5, 6, 1), rank=3), INVALID, "a", op=0),
    Targeted("matmul_output_shift_past_max", "matmul_3d",
             lambda s: s.param(0, "out_shift", 1000), INVALID, "out_shift", op=0),
    Targeted("matmul_b_offset_past_int8", "matmul_3d",
             lambda s: s.param(0, "b_offset", 1 << 20), INVALID, "b_offset", op=0),
    Targeted("lut_table_size_wraps", "lut_gelu",
             lambda s: s.dims(2, (256, 65535, 65535, 1), rank=3), INVALID, "nbytes", tensor=2),
    Targeted("lut_table_short", "lut_gelu",
             lambda s: s.dims(2, (255, 1, 1, 1)), INVALID, "table", op=0),
    Targeted("float_pool_dequant_table_short", "avgf_2x2",
             lambda s: s.dims(2, (255, 1, 1, 1)), INVALID, "dequant", op=0),
    Targeted("float_pool_dequant_table_int32", "avgf_2x2",
             lambda s: s.tensor(2, "dtype", 4), INVALID, "dequant", op=0),
    Targeted("float_pool_torch_op_unknown", "avgf_2x2",
             lambda s: s.param(0, "torch_op", 3), INVALID, "torch_op", op=0),
    Targeted("float_pool_mean_window_not_the_input", "avgf_mean_2x3",
             lambda s: s.param(0, "kernel_w", 2), INVALID, "kernel_w", op=0),
    Targeted("float_pool_adaptive_padded", "avgf_adaptive_4x3",
             lambda s: s.param(0, "pad_top", 1), INVALID, "pad_top", op=0),
    # --- alignment and offsets past the end -----------------------------------------------
    Targeted("int32_constant_at_odd_offset", "conv_1x1",
             lambda s: s.tensor(3, "offset", 385), INVALID, "offset", tensor=3),
    Targeted("int32_constant_not_16_aligned", "conv_1x1",
             lambda s: s.tensor(3, "offset", 388), INVALID, "offset", tensor=3),
    Targeted("arena_int32_not_element_aligned", "inplace_lut_reshape_fc",
             lambda s: _grow_arena(64)(s).tensor(1, "dtype", 4).dims(1, (1, 4, 3, 1))
             .tensor(1, "offset", 2), INVALID, "offset", tensor=1),
    Targeted("constant_past_end", "conv_1x1",
             lambda s: s.tensor(5, "offset", 672), INVALID, "offset", tensor=5),
    Targeted("constant_crosses_end_of_constants", "conv_1x1",
             lambda s: s.tensor(5, "offset", 592), INVALID, "offset", tensor=5),
    Targeted("arena_tensor_past_arena", "inplace_lut_reshape_fc",
             lambda s: s.tensor(3, "offset", 16), INVALID, "offset", tensor=3),
    Targeted("io_index_past_inputs", "conv_1x1",
             lambda s: s.tensor(0, "offset", 1), INVALID, "offset", tensor=0),
    Targeted("io_table_names_missing_tensor", "conv_1x1",
             lambda s: s.io(0, 6), INVALID, "inputs"),
    Targeted("op_input_id_past_tensors", "conv_1x1",
             lambda s: s.op_tensor(0, 0, 6), INVALID, "inputs[0]", op=0),
    Targeted("op_output_id_past_tensors", "conv_1x1",
             lambda s: s.op_tensor(0, 5, 999), INVALID, "output", op=0),
    Targeted("scratch_past_arena", "inplace_lut_reshape_fc",
             lambda s: s.op(3, "scratch_offset", 32).op(3, "scratch_size", 32),
             INVALID, "scratch_offset", op=3),
    Targeted("total_size_beyond_buffer", "conv_1x1",
             lambda s: s.header("total_size", s.get_header("total_size") + 16),
             "ESPNN_ERR_TRUNCATED", "total_size"),
    Targeted("truncated_header", "conv_1x1", _truncate(63), "ESPNN_ERR_TRUNCATED", "header"),
    Targeted("truncated_tail", "conv_1x1", _truncate(-1), "ESPNN_ERR_TRUNCATED",  # last byte
             "total_size"),
    # --- overlap with constants and other operands; dataflow ------------------------------
    Targeted("op_writes_into_constants", "lut_gelu",
             lambda s: s.op_tensor(0, 2, 2), INVALID, "output", op=0),
    Targeted("output_partly_overlaps_input", "inplace_lut_reshape_fc",
             lambda s: _grow_arena(64)(s).tensor(2, "offset", 16), INVALID, "inputs[0]", op=1),
    Targeted("scratch_overlaps_input", "inplace_lut_reshape_fc",
             lambda s: s.op(3, "scratch_offset", 0).op(3, "scratch_size", 16),
             INVALID, "scratch_offset", op=3),
    Targeted("reads_tensor_nothing_wrote", "inplace_lut_reshape_fc",
             lambda s: s.op_tensor(1, 0, 3), INVALID, "inputs[0]", op=1),
    Targeted("reads_its_own_output", "inplace_lut_reshape_fc",
             lambda s: s.op_tensor(2, 0, 3), INVALID, "inputs[0]", op=2),
    # --- versions and opcodes ----------------------------------------------------------------
    # the first number no opcode has: a gap left by numbers reserved ahead, or one past the last
    Targeted("opcode_unknown", "conv_1x1",
             lambda s: s.op(0, "opcode", min(set(range(1, 0x10000)) - {int(o) for o in Opcode})),
             INVALID, "opcode", op=0),
    Targeted("opcode_past_the_table", "conv_1x1",
             lambda s: s.op(0, "opcode", max(Opcode) + 1), INVALID, "opcode", op=0),
    Targeted("opcode_zero", "conv_1x1", lambda s: s.op(0, "opcode", 0), INVALID, "opcode", op=0),
    Targeted("format_minor_newer_than_reader", "conv_1x1",
             lambda s: s.header("format_minor", FORMAT_MINOR + 1), "ESPNN_ERR_VERSION", "format_version"),
    Targeted("format_major_1", "conv_1x1",
             lambda s: s.header("format_major", 1), "ESPNN_ERR_VERSION", "format_version"),
    Targeted("format_major_3", "conv_1x1",
             lambda s: s.header("format_major", 3), "ESPNN_ERR_VERSION", "format_version"),
    Targeted("bad_magic", "conv_1x1", lambda s: s.raw(0, b"ESNF"), "ESPNN_ERR_MAGIC",
             "magic"),
    # --- more than the limits ------------------------------------------------------------------
    Targeted("too_many_tensors", "conv_1x1", lambda s: s.header("n_tensors", 4097), INVALID,
             "n_tensors"),
    Targeted("zero_tensors", "conv_1x1", lambda s: s.header("n_tensors", 0), INVALID,
             "n_tensors"),
    Targeted("too_many_ops", "conv_1x1", lambda s: s.header("n_ops", 4097), INVALID, "n_ops"),
    Targeted("too_many_inputs", "concat_channels", lambda s: s.header("n_inputs", 33), INVALID,
             "n_inputs"),
    Targeted("too_many_outputs", "conv_1x1", lambda s: s.header("n_outputs", 33), INVALID,
             "n_outputs"),
    Targeted("concat_more_than_16_inputs", "concat_channels",
             lambda s: s.op(0, "n_inputs", 17), INVALID, "n_inputs", op=0),
    Targeted("rank_5", "conv_1x1", lambda s: s.tensor(0, "rank", 5), INVALID, "rank", tensor=0),
    # dims are u16 since format 2.0, so no dim can exceed 65535; an unused dim must still be 1
    Targeted("unused_dim_not_one", "conv_1x1",
             lambda s: s.tensor(0, "rank", 3), INVALID, "dims[3]", tensor=0),
    Targeted("dim_zero", "conv_1x1", lambda s: s.tensor(0, "dims[1]", 0), INVALID, "dims[1]",
             tensor=0),
]


@dataclass(frozen=True)
class Verdict:
    status: str
    field: str
    op: int
    tensor: int


def _verdicts(exe: Path, tmp: Path) -> tuple[int, str, dict[str, Verdict]]:
    paths = []
    for c in CASES:
        p = tmp / c.name
        p.write_bytes(c.payload())
        paths.append(p)
    r = build.run_replay(exe, paths, verdicts=True)
    out: dict[str, Verdict] = {}
    for line in r.log.splitlines():
        parts = line.split("\t")
        if len(parts) == 5 and parts[0].startswith(str(tmp)):
            out[Path(parts[0]).name] = Verdict(parts[1], parts[2], int(parts[3]), int(parts[4]))
    return r.returncode, r.log, out


@pytest.fixture(scope="module")
def engine_verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Verdict]]:
    """Each case through the -m32 and the 64-bit ASan/UBSan engine, in one process each."""
    result = {}
    for arch, m32 in (("m32", True), ("m64", False)):
        rc, log, verdicts = _verdicts(build.replay(m32=m32), tmp_path_factory.mktemp(arch))
        # a sanitizer report or a broken fuzz-harness oracle fails every case
        assert rc == 0, log[-6000:]
        assert "runtime error" not in log and "AddressSanitizer" not in log, log[-6000:]
        result[arch] = verdicts
    return result


def test_case_names_unique() -> None:
    names = [c.name for c in CASES]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("arch", ["m32", "m64"])
def test_engine_rejects_with_field(case: Targeted, arch: str,
                                   engine_verdicts: dict[str, dict[str, Verdict]]) -> None:
    v = engine_verdicts[arch][case.name]
    assert (v.status, v.field) == (case.status, case.field), v
    if case.op >= 0:
        assert v.op == case.op, v
    if case.tensor >= 0:
        assert v.tensor == case.tensor, v


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_python_reader_rejects_with_same_field(case: Targeted) -> None:
    with pytest.raises(PayloadError) as e:
        decode(case.payload())
    assert e.value.field == case.field, str(e.value)
    if case.op >= 0:
        assert e.value.op == case.op, str(e.value)
    if case.tensor >= 0:
        assert e.value.tensor == case.tensor, str(e.value)


def test_base_payloads_are_valid() -> None:
    """The edits, not the bases, make the cases invalid."""
    for base in sorted({c.base for c in CASES}):
        decode(_golden()[base])
