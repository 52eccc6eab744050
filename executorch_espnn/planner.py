"""Static memory plan for a delegate's activation arena.

API used by the backend's preprocess.  Every activation and scratch buffer of one payload is a
``PlanBuffer`` with a lifetime in op indices; ``plan_arena`` returns byte offsets such that
buffers whose lifetimes overlap never share bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .payload.format import ARENA_ALIGN


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


def plan_arena(buffers: Sequence[PlanBuffer], align: int = ARENA_ALIGN) -> ArenaPlan:
    """Placeholder plan: every buffer gets its own bytes (correct, not compact)."""
    offsets: dict[int, int] = {}
    top = 0
    for b in buffers:
        offsets[b.id] = top
        top += _align(b.nbytes, align)
    return ArenaPlan(offsets, top, lower_bound(buffers))
