"""The arena planner: never overlaps live buffers, honours in-place, stays near the peak."""

from __future__ import annotations

import random

import pytest

from executorch_espnn.payload import DType, Opcode, OpRec, Storage, TensorRec
from executorch_espnn.planner import (
    PlanBuffer,
    lower_bound,
    payload_buffers,
    plan_arena,
    scratch_key,
)
from tests.planner_helpers import SeqBuilder, check_plan, dscnn_seq, mobilenet_v2_seq, resnet8_seq


def _peak_by_brute_force(buffers: list[PlanBuffer]) -> int:
    # recomputed here from scratch, op by op, rather than trusting planner.lower_bound
    ops = range(max(b.last for b in buffers) + 1)
    best = 0
    for i in ops:
        live = {b.id: b for b in buffers if b.first <= i <= b.last}
        total = sum(b.nbytes for b in live.values() if not (b.inplace_of in live and b.first == i))
        best = max(best, total)
    return best


def test_empty() -> None:
    plan = plan_arena([])
    assert plan.size == 0 and plan.offsets == {} and plan.lower_bound == 0


def test_disjoint_lifetimes_share_bytes() -> None:
    bufs = [PlanBuffer(0, 100, 0, 1), PlanBuffer(1, 100, 2, 3), PlanBuffer(2, 50, 4, 4)]
    plan = plan_arena(bufs)
    check_plan(bufs, plan)
    assert plan.size == 100 == plan.lower_bound


def test_touching_lifetimes_do_not_share() -> None:
    # op 1 reads buffer 0 and writes buffer 1: both are live during op 1
    bufs = [PlanBuffer(0, 100, 0, 1), PlanBuffer(1, 100, 1, 2)]
    plan = plan_arena(bufs)
    check_plan(bufs, plan)
    assert plan.size == 16 * 7 + 100  # second starts at the aligned end of the first
    assert plan.lower_bound == 200


def test_offsets_are_aligned() -> None:
    bufs = [PlanBuffer(i, 1 + 7 * i, 0, 3) for i in range(10)]
    plan = plan_arena(bufs)
    check_plan(bufs, plan)
    assert all(o % 16 == 0 for o in plan.offsets.values())
    plan32 = plan_arena(bufs, align=32)
    check_plan(bufs, plan32, align=32)


def test_inplace_takes_the_input_bytes() -> None:
    s = SeqBuilder()
    a = s.op([], 64)
    b = s.op([a], 64, inplace_of=a)  # LUT in place
    c = s.op([b], 64, inplace_of=b)  # reshape in place
    d = s.op([c], 32)
    bufs = s.buffers()
    plan = plan_arena(bufs)
    check_plan(bufs, plan)
    assert plan.offsets[a] == plan.offsets[b] == plan.offsets[c]
    assert plan.offsets[d] >= 64 or plan.offsets[d] + 32 <= plan.offsets[c]
    assert plan.lower_bound == 96 == _peak_by_brute_force(bufs)


def test_inplace_add_with_residual() -> None:
    s = SeqBuilder()
    x = s.op([], 256)
    y = s.op([x], 256, scratch=48)
    z = s.op([x, y], 256, inplace_of=y)
    bufs = s.buffers()
    plan = plan_arena(bufs)
    check_plan(bufs, plan)
    assert plan.offsets[z] == plan.offsets[y]
    assert plan.lower_bound == 256 * 2 + 48


def test_scratch_lives_only_during_its_op() -> None:
    s = SeqBuilder()
    a = s.op([], 128)
    b = s.op([a], 128, scratch=512)  # scratch with a and b live
    s.op([b], 128, scratch=512)  # scratch with b and c live
    bufs = s.buffers()
    plan = plan_arena(bufs)
    check_plan(bufs, plan)
    scratch = [b for b in bufs if b.id < 0]
    assert all(b.first == b.last for b in scratch)
    # both scratch buffers can take the same bytes, so the arena is 2 tensors + 1 scratch
    assert plan.size == plan.lower_bound == 128 * 2 + 512


@pytest.mark.parametrize(
    ("bufs", "msg"),
    [
        ([PlanBuffer(0, 8, 0, 1), PlanBuffer(0, 8, 1, 2)], "appears twice"),
        ([PlanBuffer(0, 8, 3, 1)], "first <= last"),
        ([PlanBuffer(0, -1, 0, 1)], "must be >= 0"),
        ([PlanBuffer(1, 8, 1, 2, inplace_of=7)], "unknown buffer 7"),
        ([PlanBuffer(0, 8, 0, 1), PlanBuffer(1, 16, 1, 2, inplace_of=0)], "sizes differ"),
        ([PlanBuffer(0, 8, 0, 3), PlanBuffer(1, 8, 1, 2, inplace_of=0)], "last use is op 3"),
        (
            [PlanBuffer(0, 8, 0, 1), PlanBuffer(1, 8, 1, 2, inplace_of=0), PlanBuffer(2, 8, 1, 2, inplace_of=0)],
            "two buffers are in place of buffer 0",
        ),
    ],
)
def test_contract_violations_raise(bufs: list[PlanBuffer], msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        plan_arena(bufs)


def test_bad_alignment_raises() -> None:
    with pytest.raises(ValueError, match="power of two"):
        plan_arena([PlanBuffer(0, 8, 0, 0)], align=12)


def _random_buffers(rng: random.Random, n: int, n_ops: int) -> list[PlanBuffer]:
    bufs: list[PlanBuffer] = []
    for i in range(n):
        first = rng.randrange(n_ops)
        last = min(n_ops - 1, first + int(rng.expovariate(0.3)))
        nbytes = rng.choice([0, 1, 3, 16, 17, 100, 1000, rng.randrange(1, 5000)])
        inplace = None
        # occasionally in place of an earlier buffer that dies exactly here, when free
        cands = [b for b in bufs if b.last == first and b.nbytes == nbytes and b.id not in
                 {x.inplace_of for x in bufs}]
        if cands and rng.random() < 0.5:
            inplace = cands[0].id
        bufs.append(PlanBuffer(i, nbytes, first, last, inplace))
    return bufs


@pytest.mark.parametrize("seed", range(40))
def test_random_lifetimes_never_overlap(seed: int) -> None:
    rng = random.Random(seed)
    bufs = _random_buffers(rng, rng.randrange(1, 120), rng.randrange(1, 60))
    plan = plan_arena(bufs)
    check_plan(bufs, plan)
    assert plan.lower_bound == _peak_by_brute_force(bufs) == lower_bound(bufs)
    assert plan.size >= plan.lower_bound


def test_adversarial_staircase() -> None:
    # sizes grow while lifetimes shrink: a naive first-fit by op order fragments badly
    bufs = []
    n = 30
    for i in range(n):
        bufs.append(PlanBuffer(i, 16 * (i + 1), i, 2 * n - i))
    for i in range(n):
        bufs.append(PlanBuffer(100 + i, 16 * (n - i), 2 * n + 1 + i, 3 * n + 1))
    plan = plan_arena(bufs)
    check_plan(bufs, plan)
    assert plan.size >= plan.lower_bound


def test_adversarial_many_scratch_and_identical_sizes() -> None:
    s = SeqBuilder()
    xs = [s.op([], 1000) for _ in range(8)]
    y = s.op(xs, 1000, scratch=4000)
    for _ in range(20):
        y = s.op([y], 1000, scratch=1234)
    bufs = s.buffers(keep=(y,))
    plan = plan_arena(bufs)
    check_plan(bufs, plan)
    assert plan.size <= 1.01 * plan.lower_bound + 16


@pytest.mark.parametrize(
    "seq",
    [
        pytest.param(lambda: mobilenet_v2_seq(0.35, 96), id="mobilenetv2-0.35-96"),
        pytest.param(lambda: mobilenet_v2_seq(1.0, 224), id="mobilenetv2-1.0-224"),
        pytest.param(lambda: mobilenet_v2_seq(0.5, 128), id="mobilenetv2-0.5-128"),
        pytest.param(resnet8_seq, id="resnet8"),
        pytest.param(dscnn_seq, id="dscnn"),
    ],
)
def test_realistic_sequences_near_lower_bound(seq: object) -> None:
    bufs = seq()  # type: ignore[operator]
    plan = plan_arena(bufs)
    check_plan(bufs, plan)
    assert plan.lower_bound == _peak_by_brute_force(bufs)
    assert plan.size <= 1.01 * plan.lower_bound + 16, (plan.size, plan.lower_bound)


# ---------------------------------------------------------------------------------------
# a payload's op list as buffers: lifetimes, scratch and the in-place choice
# (the rules are docs/payload-format.md's "in place" column and its dataflow rules)

def _arena(*dims: int) -> TensorRec:
    return TensorRec(DType.INT8, dims, Storage.ARENA)


def _by_id(tensors: list[TensorRec], ops: list[OpRec]) -> dict[int, PlanBuffer]:
    return {b.id: b for b in payload_buffers(tensors, ops)}


def test_payload_buffers_lifetimes_and_scratch() -> None:
    tensors = [TensorRec(DType.FLOAT32, (1, 8), Storage.INPUT), _arena(1, 8), _arena(1, 8),
               TensorRec(DType.INT8, (1, 8), Storage.OUTPUT)]
    ops = [OpRec(Opcode.QUANTIZE, (0,), 1), OpRec(Opcode.SOFTMAX, (1,), 2, scratch_size=48),
           OpRec(Opcode.ADD, (1, 2), 3)]
    bufs = _by_id(tensors, ops)
    assert set(bufs) == {1, 2, scratch_key(1)}  # arena tensors and the one scratch range
    assert (bufs[1].first, bufs[1].last, bufs[1].nbytes) == (0, 2, 8)
    assert (bufs[2].first, bufs[2].last) == (1, 2)
    assert (bufs[scratch_key(1)].first, bufs[scratch_key(1)].last, bufs[scratch_key(1)].nbytes) == (1, 1, 48)
    # the SOFTMAX input is read again by op 2, and SOFTMAX is no in-place op anyway
    assert bufs[2].inplace_of is None


def test_in_place_only_over_an_input_read_last_by_the_op() -> None:
    tensors = [_arena(1, 8), _arena(1, 8), _arena(1, 8), _arena(1, 8)]
    ops = [OpRec(Opcode.QUANTIZE, (), 0), OpRec(Opcode.LUT, (0, None), 1),  # table slot unused here
           OpRec(Opcode.LUT, (1, None), 2), OpRec(Opcode.ADD, (0, 2), 3)]
    bufs = _by_id(tensors, ops)
    assert bufs[1].inplace_of is None  # tensor 0 is still read by op 3
    assert bufs[2].inplace_of == 1  # tensor 1's last reader is op 2
    assert bufs[3].inplace_of == 0  # ADD: slot 0 qualifies first


def test_add_in_place_over_its_second_operand() -> None:
    tensors = [_arena(1, 8), _arena(1, 8), _arena(1, 8), _arena(1, 8)]
    ops = [OpRec(Opcode.QUANTIZE, (), 0), OpRec(Opcode.QUANTIZE, (), 1),
           OpRec(Opcode.ADD, (0, 1), 2), OpRec(Opcode.MUL, (0, 2), 3)]
    bufs = _by_id(tensors, ops)
    assert bufs[2].inplace_of == 1  # tensor 0 (slot 0) is still read by op 3: slot 1 it is
    assert bufs[3].inplace_of == 0


def test_no_in_place_for_twice_read_or_reshaped_dims() -> None:
    tensors = [_arena(1, 8), _arena(1, 8), _arena(2, 4), _arena(2, 4), _arena(1, 8)]
    ops = [OpRec(Opcode.QUANTIZE, (), 0), OpRec(Opcode.ADD, (0, 0), 1),  # x + x: never in place
           OpRec(Opcode.RESHAPE, (1,), 2),  # a view: any dims of the same size
           OpRec(Opcode.LUT, (2, None), 3), OpRec(Opcode.LUT, (3, None), 4)]  # LUT needs equal dims
    bufs = _by_id(tensors, ops)
    assert bufs[1].inplace_of is None
    assert bufs[2].inplace_of == 1
    assert bufs[3].inplace_of == 2
    assert bufs[4].inplace_of is None


def test_conv_never_in_place() -> None:
    tensors = [_arena(1, 4, 4, 8), _arena(1, 4, 4, 8)]
    ops = [OpRec(Opcode.QUANTIZE, (), 0), OpRec(Opcode.CONV2D, (0, None, None, None, None), 1)]
    assert _by_id(tensors, ops)[1].inplace_of is None
