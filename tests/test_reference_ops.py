"""The reference executor against independent computations.

Every factory case is compared with PyTorch's float computation (dequantize, float32 op,
round-half-even quantize): within 1 LSB on every element for arithmetic ops, exactly for data
movement, LUT and quantize/dequantize.  The fixed-point helpers are checked against big-integer
Python written from the spec text, and softmax against a scalar transcription of the
algorithm and its known extremes.
"""

from __future__ import annotations

import random
import struct
import time

import numpy as np
import pytest
import torch

from devkit.payload_factory import (
    SOFTMAX_Q,
    Case,
    PayloadBuilder,
    QParams,
    all_cases,
    binary_params,
    case_by_name,
    lut_table,
    mobilenet_v2_graph,
    softmax_case,
)
from executorch_espnn.errors import DelegateInputError
from executorch_espnn.payload import DType, Opcode, PayloadError, decode
from executorch_espnn.payload.families.softmax.reference import SOFTMAX_MAX_ROW
from executorch_espnn.quant_math import quantize_multiplier, rdbp, requant, softmax_params, srdhm
from executorch_espnn.reference import KERNELS, Executor, run_delegate
from executorch_espnn.reference.memory import POISON

CASES = all_cases(seed=0)


def _assert_close(case: Case, got: list[np.ndarray]) -> None:
    assert case.expected_torch is not None
    assert len(got) == len(case.expected_torch)
    for k, (g, e, lsb) in enumerate(zip(got, case.expected_torch, case.output_lsb, strict=True)):
        assert g.shape == e.shape, (case.name, k, g.shape, e.shape)
        assert g.dtype == e.dtype, (case.name, k, g.dtype, e.dtype)
        if case.tolerance_lsb == 0:
            np.testing.assert_array_equal(g, e, err_msg=f"{case.name} output {k}")
            continue
        diff = np.abs(g.astype(np.float64) - e.astype(np.float64))
        # float outputs: one LSB is the scale; allow float32 rounding of the dequantized values
        limit = case.tolerance_lsb * lsb * (1 + 1e-5)
        worst = int(np.argmax(diff))
        assert diff.max() <= limit, (
            f"{case.name} output {k}: |diff| {diff.max()} > {limit} at flat index {worst} "
            f"(got {g.reshape(-1)[worst]}, torch {e.reshape(-1)[worst]})"
        )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_against_torch(case: Case) -> None:
    _assert_close(case, run_delegate(case.payload, case.inputs))


@pytest.mark.parametrize("seed", [1, 2])
def test_against_torch_other_seeds(seed: int) -> None:
    for case in all_cases(seed=seed):
        _assert_close(case, run_delegate(case.payload, case.inputs))


def test_every_opcode_has_a_kernel_and_a_case() -> None:
    assert set(KERNELS.by_opcode) == set(Opcode)
    covered = {op.opcode for c in CASES for op in decode(c.payload).ops}
    assert covered == set(Opcode)


def test_inputs_are_not_modified_and_outputs_are_fresh() -> None:
    case = case_by_name("inplace_add")
    before = [x.copy() for x in case.inputs]
    out1 = run_delegate(case.payload, case.inputs)
    out2 = run_delegate(case.payload, case.inputs)
    for a, b in zip(before, case.inputs, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(out1[0], out2[0])
    assert out1[0] is not out2[0]


# --------------------------------------------------------------------------- input checks


def test_input_count_mismatch() -> None:
    case = case_by_name("add_same")
    with pytest.raises(DelegateInputError, match="takes 2 input\\(s\\), got 1"):
        run_delegate(case.payload, case.inputs[:1])


def test_input_dtype_mismatch() -> None:
    case = case_by_name("add_same")
    bad = [case.inputs[0], case.inputs[1].astype(np.float32)]
    with pytest.raises(DelegateInputError, match=r"input 1: expected int8 with shape \(1, 4, 5, 8\), got float32"):
        run_delegate(case.payload, bad)


def test_input_shape_mismatch_is_a_value_error() -> None:
    case = case_by_name("conv_1x1")
    x = case.inputs[0]
    nchw = np.ascontiguousarray(x.transpose(0, 3, 1, 2))  # same element count, wrong layout
    with pytest.raises(ValueError, match=r"input 0: expected int8 with shape \(1, 6, 7, 16\), got int8 with shape \(1, 16, 6, 7\)"):
        run_delegate(case.payload, [nchw])


def test_input_not_an_array() -> None:
    case = case_by_name("lut_tanh")
    with pytest.raises(DelegateInputError, match="input 0: expected a numpy array of int8"):
        run_delegate(case.payload, [case.inputs[0].tolist()])


def test_float_input_dtype_checked() -> None:
    case = case_by_name("quantize_nchw_to_nhwc")
    with pytest.raises(DelegateInputError, match=r"expected float32 .* got float64"):
        run_delegate(case.payload, [case.inputs[0].astype(np.float64)])


def test_non_contiguous_input_is_accepted() -> None:
    case = case_by_name("transpose_2d")
    x = np.asfortranarray(case.inputs[0])
    np.testing.assert_array_equal(run_delegate(case.payload, [x])[0], case.expected_torch[0])  # type: ignore[index]


def test_invalid_payload_is_rejected() -> None:
    data = bytearray(case_by_name("lut_tanh").payload)
    data[0:4] = b"XXXX"
    with pytest.raises(PayloadError, match="magic"):
        run_delegate(bytes(data), case_by_name("lut_tanh").inputs)


# --------------------------------------------------------------------------- memory simulation


def _lut_chain(shared: bool) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    """input -> RESHAPE -> arena A; LUT(A) -> B (B on A's bytes when ``shared``); RESHAPE B -> out."""
    q = QParams(0.05, 3)
    table = lut_table(torch.tanh, q, QParams(1 / 128, 0))
    b = PayloadBuilder()
    x = b.input(DType.INT8, (3, 50), q)
    a = b.arena(DType.INT8, (3, 50), q)
    out_b = b.arena(DType.INT8, (3, 50), QParams(1 / 128, 0),
                    offset=b.tensors[a].offset if shared else None)
    out = b.output(DType.INT8, (3, 50), QParams(1 / 128, 0))
    b.op(Opcode.RESHAPE, [x], a)
    b.op(Opcode.LUT, [a, b.const(table)], out_b)
    b.op(Opcode.RESHAPE, [out_b], out)
    xs = np.random.default_rng(3).integers(-128, 128, (3, 50), dtype=np.int8)
    return b.build(), xs, table, table[xs.astype(np.int16) + 128]


@pytest.mark.parametrize("shared", [False, True])
def test_lut_in_place(shared: bool) -> None:
    payload, xs, _, want = _lut_chain(shared)
    np.testing.assert_array_equal(run_delegate(payload, [xs])[0], want)


def test_add_in_place_over_second_operand() -> None:
    """ADD whose output takes the bytes of input b (slot 1), with a broadcasting a."""
    rng = np.random.default_rng(4)
    q_a, q_b, q_o = QParams(0.03, -4), QParams(0.05, 7), QParams(0.07, 1)
    b = PayloadBuilder()
    ta = b.input(DType.INT8, (1, 1, 1, 6), q_a)
    tb = b.input(DType.INT8, (1, 3, 4, 6), q_b)
    arena_b = b.arena(DType.INT8, (1, 3, 4, 6), q_b)
    arena_o = b.arena(DType.INT8, (1, 3, 4, 6), q_o, offset=b.tensors[arena_b].offset)
    out = b.output(DType.INT8, (1, 3, 4, 6), q_o)
    params = binary_params(Opcode.ADD, q_a, q_b, q_o)
    b.op(Opcode.RESHAPE, [tb], arena_b)
    b.op(Opcode.ADD, [ta, arena_b], arena_o, **params)
    b.op(Opcode.RESHAPE, [arena_o], out)
    a = rng.integers(-128, 128, (1, 1, 1, 6), dtype=np.int8)
    bb = rng.integers(-128, 128, (1, 3, 4, 6), dtype=np.int8)
    # the same ADD into separate output memory
    b2 = PayloadBuilder()
    t2a = b2.input(DType.INT8, (1, 1, 1, 6), q_a)
    t2b = b2.input(DType.INT8, (1, 3, 4, 6), q_b)
    o2 = b2.output(DType.INT8, (1, 3, 4, 6), q_o)
    b2.op(Opcode.ADD, [t2a, t2b], o2, **params)
    np.testing.assert_array_equal(run_delegate(b.build(), [a, bb])[0],
                                  run_delegate(b2.build(), [a, bb])[0])


def test_shared_offsets_really_share_memory() -> None:
    """Two tensors the plan puts on the same bytes: the later write is what the reader sees.

    The validator cannot know lifetimes, so this plan (B overwrites A while A is still needed)
    passes decode; the reference must show the corruption exactly as the device would.
    """
    q = QParams(0.05, 0)
    b = PayloadBuilder()
    x = b.input(DType.INT8, (16,), q)
    y = b.input(DType.INT8, (16,), q)
    a = b.arena(DType.INT8, (16,), q)
    a2 = b.arena(DType.INT8, (16,), q, offset=b.tensors[a].offset)  # clobbers a
    out = b.output(DType.INT8, (16,), q)
    b.op(Opcode.RESHAPE, [x], a)
    b.op(Opcode.RESHAPE, [y], a2)
    b.op(Opcode.RESHAPE, [a], out)  # reads a after a2 overwrote its bytes
    xs = np.arange(16, dtype=np.int8)
    ys = -np.arange(16, dtype=np.int8)
    np.testing.assert_array_equal(run_delegate(b.build(), [xs, ys])[0], ys)


def test_scratch_is_poisoned() -> None:
    """An op's scratch range holds garbage when the op starts (the device makes no promise)."""
    q = QParams(0.05, 0)
    b = PayloadBuilder()
    x = b.input(DType.INT8, (16,), q)
    a = b.arena(DType.INT8, (16,), q)
    b.op(Opcode.RESHAPE, [x], a)
    # a later tensor placed where the next op's scratch lives: a bad plan
    c = b.arena(DType.INT8, (16,), q)
    b2 = b.arena(DType.INT8, (16,), q)
    out = b.output(DType.INT8, (16,), q)
    b.op(Opcode.RESHAPE, [a], c)
    b.scratch(b.op(Opcode.RESHAPE, [a], b2), 16, offset=b.tensors[c].offset)
    b.op(Opcode.RESHAPE, [c], out)
    got = run_delegate(b.build(), [np.arange(16, dtype=np.int8)])[0]
    np.testing.assert_array_equal(got.view(np.uint8), np.full(16, POISON, dtype=np.uint8))


# --------------------------------------------------------------------------- quantize corners


def _quantize_payload(scale: float, zp: int, n: int) -> bytes:
    b = PayloadBuilder()
    x = b.input(DType.FLOAT32, (n,))
    out = b.output(DType.INT8, (n,), QParams(scale, zp))
    b.op(Opcode.QUANTIZE, [x], out, perm0=0, perm1=1, perm2=2, perm3=3)
    return b.build()


def test_quantize_nan_inf_and_saturation() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 1e30, -1e30, 0.0, -0.0, 12.5, 13.5, -12.5],
                 dtype=np.float32)
    got = run_delegate(_quantize_payload(0.5, -3, len(x)), [x])[0]
    # 12.5/0.5 = 25 exactly, 13.5/0.5 = 27; -12.5 -> -25; each + zero point
    np.testing.assert_array_equal(got, np.array([-3, 127, -128, 127, -128, -3, -3, 22, 24, -28],
                                                dtype=np.int8))


def test_quantize_uses_float32_inverse_scale() -> None:
    """x * (1/scale) in float32 can differ from x / scale: the spec takes the former."""
    scale = float(np.float32(0.1))
    inv = np.float32(1) / np.float32(scale)
    xs = (np.arange(-1200, 1200, dtype=np.float32) + np.float32(0.5)) * np.float32(scale)
    xs = xs.astype(np.float32)
    want = np.clip(np.rint((xs * inv).astype(np.float32)).astype(np.int64) + 1, -128, 127).astype(np.int8)
    got = run_delegate(_quantize_payload(scale, 1, len(xs)), [xs])[0]
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- fixed point vs big ints

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _srdhm_spec(a: int, b: int) -> int:
    """SRDHM as the spec text defines it, in Python's unbounded integers."""
    if a == b == INT32_MIN:
        return INT32_MAX
    p = a * b
    nudge = 2**30 if p >= 0 else 1 - 2**30
    s = p + nudge
    q = abs(s) // 2**31  # C's truncating division
    return q if s >= 0 else -q


def _rdbp_spec(x: int, e: int) -> int:
    mask = 2**e - 1
    r = x >> e  # Python's >> is an arithmetic (floor) shift
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return r + 1 if (x & mask) > threshold else r


def _int32_samples(rng: random.Random, n: int) -> list[int]:
    corners = [INT32_MIN, INT32_MIN + 1, -1, 0, 1, INT32_MAX, INT32_MAX - 1, 2**30, -(2**30),
               2**30 - 1, 1 - 2**30]
    return corners + [rng.randint(INT32_MIN, INT32_MAX) for _ in range(n)] + [
        rng.randint(-1000, 1000) for _ in range(n // 4)]


def test_srdhm_against_big_integers() -> None:
    rng = random.Random(0)
    a_vals = _int32_samples(rng, 3000)
    b_vals = _int32_samples(rng, 3000)
    rng.shuffle(b_vals)
    pairs = [(a, b) for a, b in zip(a_vals, b_vals, strict=False)]
    pairs += [(a, b) for a in a_vals[:11] for b in b_vals[:11]]
    pairs += [(INT32_MIN, INT32_MIN), (INT32_MIN, INT32_MAX), (INT32_MAX, INT32_MAX)]
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    got = srdhm(a, b)
    want = np.array([_srdhm_spec(x, y) for x, y in pairs], dtype=np.int64)
    np.testing.assert_array_equal(got, want)
    assert int(srdhm(INT32_MIN, INT32_MIN)) == INT32_MAX


def test_rdbp_against_big_integers() -> None:
    rng = random.Random(1)
    xs = _int32_samples(rng, 2000)
    # ties: x = (2k + 1) * 2^(e-1) for every exponent
    for e in range(1, 32):
        for k in (-3, -2, -1, 0, 1, 2):
            v = (2 * k + 1) * 2 ** (e - 1)
            if INT32_MIN <= v <= INT32_MAX:
                xs.append(v)
    for e in range(32):
        x = np.array(xs, dtype=np.int64)
        np.testing.assert_array_equal(rdbp(x, e), [_rdbp_spec(v, e) for v in xs], err_msg=f"e={e}")


def test_requant_against_big_integers() -> None:
    rng = random.Random(2)
    xs = _int32_samples(rng, 500)
    for _ in range(200):
        real = rng.uniform(1e-6, 0.999)
        mult, shift = quantize_multiplier(real)
        assert 2**30 <= mult < 2**31 and -31 <= shift <= 0
        got = requant(np.array(xs, dtype=np.int64), mult, shift)
        want = [_rdbp_spec(_srdhm_spec(x, mult), -shift) for x in xs]
        np.testing.assert_array_equal(got, want)
        # the multiplier represents `real`: requant(x) is x * real up to rounding
        x = 1_000_000
        assert abs(int(requant(x, mult, shift)) - x * real) <= 1 + x * real * 2**-30


def test_quantize_multiplier_against_exact_fraction() -> None:
    from fractions import Fraction

    rng = random.Random(3)
    for _ in range(2000):
        real = rng.uniform(1e-9, 1.0) * 10 ** rng.randint(-3, 0)
        mult, shift = quantize_multiplier(real)
        if mult == 0:
            continue
        approx = Fraction(mult, 2**31) * Fraction(2) ** shift
        # round to nearest in the 31-bit significand: relative error <= 2^-31
        assert abs(approx - Fraction(real)) <= Fraction(real) * Fraction(1, 2**30)
        assert 2**30 <= mult < 2**31
    with pytest.raises(ValueError, match="finite and non-negative"):
        quantize_multiplier(-1.0)
    assert quantize_multiplier(0.0) == (0, 0)


def test_requant_rejects_positive_shift() -> None:
    with pytest.raises(ValueError, match="positive shifts"):
        requant(np.array([1]), 2**30, 1)


# --------------------------------------------------------------------------- softmax


def _softmax_scalar(row: list[int], mult: int, shift: int, diff_min: int) -> list[int]:
    """A deliberately plain, one-element-at-a-time transcription of the int8 softmax
    (TFLite's fixed-point algorithm) in Python integers, wrapping to int32 as C does."""

    def w32(v: int) -> int:
        return (v + 2**31) % 2**32 - 2**31

    def mul(a: int, b: int) -> int:
        return _srdhm_spec(a, b)

    def div(x: int, e: int) -> int:
        return _rdbp_spec(x, e)

    def sat_pow2(v: int, e: int) -> int:
        t = 2 ** (31 - e) - 1
        if v > t:
            return INT32_MAX
        if v < -t:
            return INT32_MIN
        return w32(v * 2**e)

    def exp_neg(a: int) -> int:
        if a == 0:
            return INT32_MAX
        quarter = 2**24
        m = (a & (quarter - 1)) - quarter
        rem = m - a
        x = m * 32 + 2**28
        x2 = mul(x, x)
        x3 = mul(x2, x)
        x4 = mul(x2, x2)
        poly = div(mul(div(x4, 2) + x3, 715827883) + x2, 1)
        c = 1895147668  # exp(-1/8) in Q0.31
        r = c + mul(c, x + poly)
        for k, f in enumerate((1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242)):
            if rem & (1 << (24 + k)):
                r = mul(r, f)
        return r

    def recip(a: int) -> int:
        half = (a + INT32_MAX + 1) // 2
        x = 1515870810 + mul(half, -1010580540)
        for _ in range(3):
            x = w32(x + sat_pow2(mul(x, 2**29 - mul(half, x)), 2))
        return sat_pow2(x, 1)

    mx = max(row)
    total = 0
    for v in row:
        d = v - mx
        if d >= diff_min:
            total += div(exp_neg(mul(d * 2**shift, mult)), 12)
    clz = 32 - total.bit_length()
    scale = recip(((total << clz) % 2**32) - 2**31)
    out = []
    for v in row:
        d = v - mx
        if d < diff_min:
            out.append(-128)
            continue
        e = exp_neg(mul(d * 2**shift, mult))
        r = div(mul(scale, e), 12 - clz + 31 - 8) - 128
        out.append(max(-128, min(127, r)))
    return out


def _run_softmax(x: np.ndarray, q_in: QParams) -> np.ndarray:
    b = PayloadBuilder()
    t = b.input(DType.INT8, x.shape, q_in)
    o = b.output(DType.INT8, x.shape, SOFTMAX_Q)
    mult, shift, diff_min = softmax_params(q_in.scale)
    b.op(Opcode.SOFTMAX, [t], o, mult=mult, shift=shift, diff_min=diff_min)
    return run_delegate(b.build(), [x])[0]


@pytest.mark.parametrize("scale", [0.002, 0.02, 0.0625, 0.1, 0.4, 1.5])
def test_softmax_matches_scalar_transcription(scale: float) -> None:
    rng = np.random.default_rng(int(scale * 1000))
    x = rng.integers(-128, 128, (12, 37), dtype=np.int8)
    x[0] = 5  # all equal
    x[1, :] = -128
    x[1, 3] = 127  # one huge logit
    q = QParams(float(np.float32(scale)), 0)
    mult, shift, diff_min = softmax_params(q.scale)
    got = _run_softmax(x, q)
    for r in range(x.shape[0]):
        want = _softmax_scalar([int(v) for v in x[r]], mult, shift, diff_min)
        assert got[r].tolist() == want, f"row {r}"


def test_softmax_all_equal() -> None:
    for width in (1, 2, 3, 10, 255, 256):
        x = np.full((1, width), 17, dtype=np.int8)
        got = _run_softmax(x, QParams(0.05, 0))
        want = np.clip(round(256 / width) - 128, -128, 127)
        assert np.all(np.abs(got.astype(int) - want) <= 1), (width, got[0, 0], want)
        assert np.all(got == got[0, 0])


def test_softmax_one_huge_logit() -> None:
    x = np.full((3, 20), -128, dtype=np.int8)
    x[np.arange(3), [0, 7, 19]] = 127
    got = _run_softmax(x, QParams(0.5, 0))
    assert got[np.arange(3), [0, 7, 19]].tolist() == [127, 127, 127]
    mask = np.ones_like(got, dtype=bool)
    mask[np.arange(3), [0, 7, 19]] = False
    assert np.all(got[mask] == -128)


def test_softmax_diff_min_cutoff() -> None:
    """Entries whose difference to the row max is below diff_min are exactly -128 and do not
    count in the sum; with a large input scale the cut-off falls inside the int8 range."""
    q = QParams(1.0, 0)
    mult, shift, diff_min = softmax_params(q.scale)
    assert -255 < diff_min < 0
    x = np.array([[100, 100 + diff_min, 100 + diff_min - 1, 100 + diff_min - 30, 90]], dtype=np.int8)
    got = _run_softmax(x, q)
    want = _softmax_scalar([int(v) for v in x[0]], mult, shift, diff_min)
    assert got[0].tolist() == want
    assert got[0, 2] == -128 and got[0, 3] == -128
    # dropping the cut entries leaves the other outputs unchanged
    got2 = _run_softmax(np.array([[100, 100 + diff_min, 90]], dtype=np.int8), q)
    assert got2[0].tolist() == [got[0, 0], got[0, 1], got[0, 4]]


def test_softmax_long_rows_round_to_zero() -> None:
    """A sum of exps >= 2^28 makes the final shift exceed 31: the spec's result is -128."""
    x = np.full((1, 1000), 3, dtype=np.int8)
    got = _run_softmax(x, QParams(0.05, 0))
    assert np.all(got == -128)  # 1/1000 of 256 rounds to 0
    x = np.full((1, 300), 3, dtype=np.int8)
    got = _run_softmax(x, QParams(0.05, 0))
    assert np.all(got == -127)  # 256/300 rounds to 1


def test_softmax_row_limit() -> None:
    x = np.zeros((1, SOFTMAX_MAX_ROW + 1), dtype=np.int8)
    with pytest.raises(PayloadError, match="softmax row of 4096 exceeds 4095"):
        _run_softmax(x, QParams(0.05, 0))
    x = np.zeros((1, SOFTMAX_MAX_ROW), dtype=np.int8)
    assert np.all(_run_softmax(x, QParams(0.05, 0)) == -128)


def test_softmax_factory_extremes_against_torch() -> None:
    q = QParams(0.1, 0)
    x = np.array([[5] * 8, [-128] * 7 + [127], [0, -50, -100, -128, 10, 20, 30, 40]], dtype=np.int8)
    case = softmax_case("softmax_extremes", shape=x.shape, x_override=x, q_in=q)
    _assert_close(case, run_delegate(case.payload, case.inputs))


# --------------------------------------------------------------------------- pooling corner


def test_avg_pool_include_pad_counts_padding_as_zero_point() -> None:
    """divisor_mode 1 with a non-zero zero point: padding taps are real 0 (the zero point)."""
    zp = 40
    b = PayloadBuilder()
    q = QParams(0.1, zp)
    x = b.input(DType.INT8, (1, 2, 2, 1), q)
    out = b.output(DType.INT8, (1, 2, 2, 1), q)
    b.op(Opcode.AVG_POOL2D, [x], out, kernel_h=3, kernel_w=3, stride_h=1, stride_w=1,
         pad_top=1, pad_left=1, pad_bottom=0, pad_right=0, act_min=-128, act_max=127,
         divisor_mode=1)
    xs = np.full((1, 2, 2, 1), 100, dtype=np.int8)
    got = run_delegate(b.build(), [xs])[0]
    # window (0,0) covers rows/cols -1..1: 4 input taps, 5 padding taps, divisor 9
    # window (0,1) covers rows -1..1, cols 0..1 (clipped at W + pad_right): 4 + 2, divisor 6
    # window (1,1) covers the 2x2 input only: divisor 4
    want = [[round((400 + 5 * zp) / 9), (400 + 2 * zp) // 6], [(400 + 2 * zp) // 6, 100]]
    assert got[0, :, :, 0].tolist() == want == [[67, 80], [80, 100]]


def test_struct_sanity_of_builder_payload() -> None:
    data = case_by_name("conv_1x1").payload
    assert data[:4] == b"ESNN"
    assert struct.unpack_from("<I", data, 12)[0] == len(data)


# --------------------------------------------------------------------------- a whole network


def _chain_value_in_payload_layout(t: torch.Tensor, shape: tuple[int, ...]) -> np.ndarray:
    v = t.permute(0, 2, 3, 1) if t.dim() == 4 else t
    return v.contiguous().numpy().reshape(shape)


def test_mobilenet_v2_every_op_against_torch() -> None:
    """MobileNetV2-0.35 at 96x96 as one payload (planned arena, in-place residual ADDs): each
    op, fed the PyTorch chain's int8 inputs in the simulated memory, is within 1 LSB of the
    chain's output; the whole run takes well under the few seconds allowed."""
    g = mobilenet_v2_graph()
    case = g.case("mobilenet_v2")
    ex = Executor(case.payload, case.inputs)
    ops = ex.payload.ops
    assert len(ops) == 67 and sum(op.opcode == Opcode.ADD for op in ops) == 10
    checked = 0
    for i, op in enumerate(ops):
        for t in op.inputs:
            if t is not None and t in g.values:
                view = ex.tensor(t)
                view[...] = _chain_value_in_payload_layout(g.values[t].value, view.shape)
        ex.run_op(i)
        if op.output in g.values:
            got = ex.tensor(op.output).astype(np.int64)
            want = _chain_value_in_payload_layout(g.values[op.output].value, got.shape)
            diff = np.abs(got - want)
            assert diff.max() <= 1, f"op {i} {op.opcode.name}: {int(diff.max())} LSB"
            checked += 1
    assert checked == len(ops) - 1  # every op but the final DEQUANTIZE (a float output)

    start = time.perf_counter()
    out = run_delegate(case.payload, case.inputs)
    elapsed = time.perf_counter() - start
    assert out[0].shape == (1, 1000) and out[0].dtype == np.float32
    assert elapsed < 5.0, f"MobileNetV2-0.35 took {elapsed:.2f} s"


# --------------------------------------------------------------------------- small ranks


def test_rank0_quantize_lut_concat() -> None:
    q = QParams(0.5, 1)
    q_out = QParams(1 / 128, 0)
    table = lut_table(torch.tanh, q, q_out)
    b = PayloadBuilder()
    x = b.input(DType.FLOAT32, ())
    xq = b.arena(DType.INT8, (), q)
    act = b.arena(DType.INT8, (), q_out, offset=b.tensors[xq].offset)
    out = b.output(DType.INT8, (), q_out)
    b.op(Opcode.QUANTIZE, [x], xq, perm0=0, perm1=1, perm2=2, perm3=3)
    b.op(Opcode.LUT, [xq, b.const(table)], act)
    b.op(Opcode.CONCAT, [act], out, axis=0)
    got = run_delegate(b.build(), [np.array(1.3, dtype=np.float32)])[0]
    assert got.shape == () and int(got) == int(table[round(1.3 / 0.5) + 1 + 128])


def test_rank1_fully_connected() -> None:
    rng = np.random.default_rng(5)
    w = rng.integers(-127, 128, (3, 8)).astype(np.int8)
    x = rng.integers(-128, 128, 8).astype(np.int8)
    b = PayloadBuilder()
    t = b.input(DType.INT8, (8,), QParams(0.1, 4))
    o = b.output(DType.INT8, (3,), QParams(0.2, -2))
    mult, shift = quantize_multiplier(0.001)
    b.op(Opcode.FULLY_CONNECTED,
         [t, b.const(w), None, b.const(np.full(3, mult, np.int32)), b.const(np.full(3, shift, np.int32))],
         o, in_offset=-4, out_offset=-2, act_min=-128, act_max=127)
    got = run_delegate(b.build(), [x])[0]
    acc = (x.astype(np.int64) - 4) @ w.astype(np.int64).T
    want = [_rdbp_spec(_srdhm_spec(int(a), mult), -shift) - 2 for a in acc]
    assert got.tolist() == np.clip(want, -128, 127).tolist()
