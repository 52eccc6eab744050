"""The delegate arena's lower bound, computed here from the graph alone.

For every arena tensor of a decoded payload, its lifetime is [the op that writes it, the last
op that reads it]; at each op the live set is the sum of the live tensors' bytes plus the
scratch of the kernel running at that moment (the op record's ``scratch_size``, what the
target's ESP-NN kernel asks for).  An op the format allows to run in place (ADD, MUL, LUT,
RESHAPE: docs/payload-format.md) may write its output over an input of the same size whose
life ends at that op; that pair then counts once.  Eligibility comes from the opcode and the
lifetimes, never from the planner's offsets, so the bound does not trust the plan it judges.

No plan can use fewer bytes than the peak of this live set, so ``arena / peak`` measures how
much the planner (and its 16-byte alignment) wastes.
"""

from __future__ import annotations

from dataclasses import dataclass

from executorch_espnn.payload import Opcode, Payload, Storage

IN_PLACE_OPS = frozenset({Opcode.ADD, Opcode.MUL, Opcode.LUT, Opcode.RESHAPE})


@dataclass(frozen=True)
class PeakLive:
    bytes: int  # the lower bound
    op: int  # where it is reached (first such op)
    opcode: str
    tensor_bytes: int  # live activations at that op
    scratch_bytes: int  # the running kernel's scratch at that op


def peak_live(p: Payload) -> PeakLive:
    n = len(p.ops)
    if n == 0:
        return PeakLive(0, -1, "-", 0, 0)
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for i, op in enumerate(p.ops):
        out = p.tensors[op.output]
        if out.storage == Storage.ARENA:
            first.setdefault(op.output, i)
            last[op.output] = max(last.get(op.output, i), i)
        for tid in op.inputs:
            if tid is not None and p.tensors[tid].storage == Storage.ARENA:
                last[tid] = max(last.get(tid, i), i)
    live = [0] * n
    for tid, f in first.items():
        size = p.tensors[tid].nbytes
        for i in range(f, last[tid] + 1):
            live[i] += size
    for i, op in enumerate(p.ops):
        if op.opcode not in IN_PLACE_OPS or p.tensors[op.output].storage != Storage.ARENA:
            continue
        out_bytes = p.tensors[op.output].nbytes
        if any(tid is not None and p.tensors[tid].storage == Storage.ARENA and last[tid] == i
               and p.tensors[tid].nbytes == out_bytes for tid in op.inputs):
            live[i] -= out_bytes
    totals = [live[i] + p.ops[i].scratch_size for i in range(n)]
    peak = max(totals)
    at = totals.index(peak)
    return PeakLive(peak, at, p.ops[at].opcode.name, live[at], p.ops[at].scratch_size)
