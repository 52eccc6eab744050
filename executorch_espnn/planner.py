"""Static memory plan for a delegate's activation arena.

API used by the backend's preprocess.  Every activation and scratch buffer of one payload is a
``PlanBuffer`` with a lifetime in op indices; ``plan_arena`` returns byte offsets such that
buffers whose lifetimes overlap never share bytes.

Lifetimes are closed intervals ``[first, last]``: a buffer written by op 3 and last read by
op 5 is live during ops 3, 4 and 5, so an op's output never shares bytes with its inputs
unless it is declared in place (``inplace_of``).  Scratch is a buffer with ``first == last``.

``payload_buffers`` derives those buffers from a payload's op list: lifetimes from the op
order, scratch from each op's ``scratch_size``, and the in-place choice (which op output may
take the bytes of which input, by the rules of the format's in-place ops).

The placement is greedy, in the style of TFLite Micro's greedy planner: buffers are placed
one at a time at the lowest (or tightest) gap left by the already placed buffers whose
lifetimes overlap.  The order matters, so several orderings and two gap policies are tried
and the smallest arena is kept.  ``lower_bound`` (the largest set of simultaneously live
bytes) is what no plan can beat; the result is reported next to it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from .payload.format import ARENA_ALIGN, NO_HOME, OP_SPECS, Storage
from .payload.model import OpRec, Payload, TensorRec


@dataclass(frozen=True)
class PlanBuffer:
    id: int  # any unique key (tensor id, or a negative key for scratch)
    nbytes: int
    first: int  # index of the op that writes it (scratch: the op that uses it)
    last: int  # index of the last op that reads it (>= first)
    inplace_of: int | None = None  # may take exactly the bytes of this buffer, whose last use is `first`


@dataclass(frozen=True)
class ArenaPlan:
    offsets: dict[int, int]
    size: int
    lower_bound: int  # peak of the summed sizes of simultaneously live buffers


def _align(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def lower_bound(buffers: Sequence[PlanBuffer]) -> int:
    """The largest total of live bytes at any op: no plan can use less."""
    if not buffers:
        return 0
    end = max(b.last for b in buffers) + 1
    live = [0] * (end + 1)
    for b in buffers:
        for i in range(b.first, b.last + 1):
            live[i] += b.nbytes
        if b.inplace_of is not None:
            # an in-place output reuses its input's bytes: the pair counts once at that op
            live[b.first] -= b.nbytes
    return max(live)


@dataclass(frozen=True)
class _Block:
    """Buffers that must share one offset: an in-place chain (or a single buffer)."""

    ids: tuple[int, ...]
    nbytes: int
    first: int
    last: int


def _check(buffers: Sequence[PlanBuffer]) -> dict[int, PlanBuffer]:
    by_id: dict[int, PlanBuffer] = {}
    for b in buffers:
        if b.id in by_id:
            raise ValueError(f"plan_arena: buffer id {b.id} appears twice")
        if b.nbytes < 0 or b.first < 0 or b.last < b.first:
            raise ValueError(
                f"plan_arena: buffer {b.id} has nbytes={b.nbytes}, lifetime [{b.first}, {b.last}];"
                " sizes and op indices must be >= 0 and first <= last"
            )
        by_id[b.id] = b
    claimed: set[int] = set()
    for b in buffers:
        if b.inplace_of is None:
            continue
        src = by_id.get(b.inplace_of)
        if src is None:
            raise ValueError(f"plan_arena: buffer {b.id} is in place of unknown buffer {b.inplace_of}")
        if src.nbytes != b.nbytes:
            raise ValueError(
                f"plan_arena: buffer {b.id} ({b.nbytes} bytes) cannot reuse buffer {src.id}"
                f" ({src.nbytes} bytes) in place: sizes differ"
            )
        if src.last != b.first:
            raise ValueError(
                f"plan_arena: buffer {b.id} (written by op {b.first}) cannot reuse buffer {src.id}"
                f" in place: its last use is op {src.last}, not op {b.first}"
            )
        if src.id in claimed:
            raise ValueError(f"plan_arena: two buffers are in place of buffer {src.id}")
        claimed.add(src.id)
    return by_id


def _blocks(buffers: Sequence[PlanBuffer], by_id: dict[int, PlanBuffer]) -> list[_Block]:
    """Merge in-place chains: each output takes its input's offset, transitively."""

    def root(b: PlanBuffer) -> int:
        seen = 0
        while b.inplace_of is not None:
            b = by_id[b.inplace_of]
            seen += 1
            if seen > len(by_id):  # a cycle cannot happen with src.last == first <= last
                raise ValueError("plan_arena: in-place chain forms a cycle")
        return b.id

    members: dict[int, list[PlanBuffer]] = {}
    for b in buffers:
        members.setdefault(root(b), []).append(b)
    out = []
    for r, ms in members.items():
        out.append(
            _Block(
                ids=tuple(m.id for m in ms),
                nbytes=by_id[r].nbytes,
                first=min(m.first for m in ms),
                last=max(m.last for m in ms),
            )
        )
    return out


def _greedy(blocks: Sequence[_Block], order: Sequence[int], align: int, best_fit: bool) -> tuple[list[int], int]:
    """Place blocks in ``order``; returns the offset of every block and the arena size."""
    n = len(blocks)
    firsts = np.fromiter((b.first for b in blocks), dtype=np.int64, count=n)
    lasts = np.fromiter((b.last for b in blocks), dtype=np.int64, count=n)
    offs = np.zeros(n, dtype=np.int64)
    ends = np.zeros(n, dtype=np.int64)
    placed = np.zeros(n, dtype=bool)
    size = 0
    for i in order:
        b = blocks[i]
        if b.nbytes == 0:
            placed[i] = True
            continue
        conflict = placed & (firsts <= b.last) & (lasts >= b.first)
        idx = np.nonzero(conflict)[0]
        chosen = -1
        if idx.size:
            order_by_off = idx[np.argsort(offs[idx], kind="stable")]
            cur = 0
            best_slack = -1
            for j in order_by_off:
                o = int(offs[j])
                if o - cur >= b.nbytes:
                    slack = o - cur - b.nbytes
                    if not best_fit:
                        chosen = cur
                        break
                    if best_slack < 0 or slack < best_slack:
                        best_slack, chosen = slack, cur
                cur = max(cur, _align(int(ends[j]), align))
            if chosen < 0:
                chosen = cur
        else:
            chosen = 0
        offs[i] = chosen
        ends[i] = chosen + b.nbytes
        placed[i] = True
        size = max(size, chosen + b.nbytes)
    return [int(o) for o in offs], size


def _orderings(blocks: Sequence[_Block]) -> list[list[int]]:
    """Candidate placement orders; ties always break on the block's first op, then index."""
    n = len(blocks)
    # the bytes each block competes with: large, long-contended blocks first
    pressure = [0] * n
    if n:
        end = max(b.last for b in blocks) + 1
        live = np.zeros(end + 1, dtype=np.int64)
        for b in blocks:
            live[b.first : b.last + 1] += b.nbytes
        for k, b in enumerate(blocks):
            pressure[k] = int(live[b.first : b.last + 1].max())

    def length(b: _Block) -> int:
        return b.last - b.first + 1

    keys: list[Callable[[int], tuple[int, ...]]] = [
        lambda k: (-blocks[k].nbytes, blocks[k].first, k),
        lambda k: (-blocks[k].nbytes, -length(blocks[k]), blocks[k].first, k),
        lambda k: (-length(blocks[k]), -blocks[k].nbytes, blocks[k].first, k),
        lambda k: (-blocks[k].nbytes * length(blocks[k]), blocks[k].first, k),
        lambda k: (-pressure[k], -blocks[k].nbytes, blocks[k].first, k),
        lambda k: (blocks[k].first, -blocks[k].nbytes, k),
    ]
    seen: set[tuple[int, ...]] = set()
    out = []
    for key in keys:
        order = sorted(range(n), key=key)
        t = tuple(order)
        if t not in seen:
            seen.add(t)
            out.append(order)
    return out


def plan_arena(buffers: Sequence[PlanBuffer], align: int = ARENA_ALIGN) -> ArenaPlan:
    """Assign every buffer an ``align``-multiple offset so that live buffers never overlap.

    In-place buffers get exactly their input's offset.  Raises ``ValueError`` when the
    buffers break the contract (duplicate ids, bad lifetimes, an ``inplace_of`` whose sizes
    differ or whose input is still read after ``first``): that is a bug in the caller.
    """
    if align < 1 or align & (align - 1):
        raise ValueError(f"plan_arena: align must be a power of two, got {align}")
    by_id = _check(buffers)
    blocks = _blocks(buffers, by_id)
    best: tuple[int, list[int]] | None = None
    for order in _orderings(blocks):
        for best_fit in (False, True):
            offs, size = _greedy(blocks, order, align, best_fit)
            if best is None or size < best[0]:
                best = (size, offs)
    offsets: dict[int, int] = {}
    size = 0
    if best is not None:
        size = best[0]
        for blk, off in zip(blocks, best[1], strict=True):
            for bid in blk.ids:
                offsets[bid] = off
    return ArenaPlan(offsets, size, lower_bound(buffers))


def scratch_key(op_index: int) -> int:
    """The ``PlanBuffer.id`` of op ``op_index``'s scratch (tensor ids are >= 0)."""
    return -(op_index + 1)


def in_place_inputs(tensors: Sequence[TensorRec], ops: Sequence[OpRec], last: dict[int, int]) -> dict[int, int]:
    """Output tensor -> the input tensor whose arena bytes it takes, for each op with
    in-place slots (``OpSpec.in_place_slots``: LUT's input, either operand of ADD/MUL, …)
    whose input there is last read by that op, has the output's size (and dims, unless
    ``in_place_any_dims``) and is not read twice by it; the first such slot wins."""
    inplace: dict[int, int] = {}
    for i, op in enumerate(ops):
        out = tensors[op.output]
        spec = OP_SPECS[op.opcode]
        if out.storage != Storage.ARENA:
            continue
        for s in spec.in_place_slots:
            tid = op.inputs[s]
            if tid is None:
                continue
            t = tensors[tid]
            if (t.storage == Storage.ARENA and last.get(tid) == i and t.nbytes == out.nbytes
                    and (spec.in_place_any_dims or t.dims == out.dims)
                    and sum(1 for x in op.inputs if x == tid) == 1):
                inplace[op.output] = tid
                break
    return inplace


def arena_lifetimes(tensors: Sequence[TensorRec], ops: Sequence[OpRec],
                    homed: Collection[int] = ()) -> dict[int, tuple[int, int]]:
    """(first, last) op index of every written arena tensor and every homed delegate I/O tensor:
    the one home of the rule the planner, the peak and the report's timeline share.

    An arena tensor lives from the first op that writes it to its last reader.  ``homed`` names
    delegate inputs/outputs with a home in the arena (format 2.4's io homes): an input is live
    from before the first op (-1) to its last reader, an output from its writer to the last op,
    where the caller reads it."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for tid in homed:
        storage = tensors[tid].storage
        if storage == Storage.INPUT:
            first[tid] = last[tid] = -1
        elif storage != Storage.OUTPUT:
            raise AssertionError(f"tensor {tid} is not a delegate input or output: it cannot have an io home")

    def tracked(tid: int) -> bool:
        return tensors[tid].storage == Storage.ARENA or tid in homed

    for i, op in enumerate(ops):
        if tracked(op.output):
            first.setdefault(op.output, i)
            last[op.output] = max(last.get(op.output, i), i)
        for src in op.inputs:
            if src is not None and tracked(src):
                last[src] = max(last.get(src, i), i)
    for tid in homed:
        if tensors[tid].storage == Storage.OUTPUT and tid in first:
            last[tid] = len(ops) - 1
    return {tid: (f, last[tid]) for tid, f in first.items()}


def payload_buffers(tensors: Sequence[TensorRec], ops: Sequence[OpRec], homed: Collection[int] = ()) -> list[PlanBuffer]:
    """Every arena tensor (id = tensor id), every homed delegate I/O tensor and every op's
    scratch (id = ``scratch_key``) of a payload as a ``PlanBuffer``, with the lifetimes of
    ``arena_lifetimes``, in place of an input where ``in_place_inputs`` allows it: the
    program's I/O shares the arena with the activations and an input's bytes are reused once
    it is consumed."""
    lifetimes = arena_lifetimes(tensors, ops, homed)
    inplace = in_place_inputs(tensors, ops, {tid: until for tid, (_, until) in lifetimes.items()})
    buffers: list[PlanBuffer] = []
    for tid, t in enumerate(tensors):
        if t.storage != Storage.ARENA:
            continue
        if tid not in lifetimes:
            raise AssertionError(f"arena tensor {tid} is never written")
        f, until = lifetimes[tid]
        buffers.append(PlanBuffer(tid, t.nbytes, f, until, inplace.get(tid)))
    end = max(len(ops) - 1, 0)
    for tid in sorted(homed):
        # an unread input still holds its bytes at op 0; an unwritten output at the end
        f, until = lifetimes.get(tid, (end, end))
        buffers.append(PlanBuffer(tid, tensors[tid].nbytes, max(f, 0), max(until, 0)))
    for i, op in enumerate(ops):
        if op.scratch_size:
            buffers.append(PlanBuffer(scratch_key(i), op.scratch_size, i, i))
    return buffers


def plan_payload(p: Payload, homed: Collection[int] = ()) -> ArenaPlan:
    """Plan ``p``'s arena in place: every arena tensor's and scratch's offset, ``arena_size``,
    and, when ``homed`` names delegate I/O tensors, the io-homes table (NO_HOME for the rest;
    no table when ``homed`` is empty)."""
    plan = plan_arena(payload_buffers(p.tensors, p.ops, homed))
    for tid, t in enumerate(p.tensors):
        if t.storage == Storage.ARENA:
            t.offset = plan.offsets[tid]
    for i, op in enumerate(p.ops):
        op.scratch_offset = plan.offsets[scratch_key(i)] if op.scratch_size else 0
    p.io_homes = [plan.offsets.get(tid, NO_HOME) if tid in homed else NO_HOME
                  for tid in p.inputs + p.outputs] if homed else None
    p.arena_size = plan.size
    return plan
