"""The delegate arena's lower bound, for benchmarks/run.py's "arena / peak live" figure.

The bound itself has one home, ``executorch_espnn.payload_peak.partition_peak`` (docs/memory.md):
for every arena tensor of a decoded payload, its lifetime is [the op that writes it, the last
op that reads it]; at each op the live set is the sum of the live tensors' bytes plus the
scratch of the kernel running at that moment (``executorch_espnn.scratch`` for the op's
operands).  An op the format allows to run in place (ADD, MUL, LUT, RESHAPE:
docs/payload-format.md) may write its output over an input of the same size whose life ends at
that op; that pair then counts once.  Eligibility comes from the opcode and the lifetimes, never
from the planner's offsets, so the bound does not trust the plan it judges.

No plan can use fewer bytes than the peak of this live set, so ``arena / peak`` measures how
much the planner (and its 16-byte alignment) wastes.
"""

from __future__ import annotations

from dataclasses import dataclass

from executorch_espnn.payload import Payload
from executorch_espnn.payload_peak import partition_peak


@dataclass(frozen=True)
class PeakLive:
    bytes: int  # the lower bound
    op: int  # where it is reached (first such op)
    opcode: str
    tensor_bytes: int  # live activations at that op
    scratch_bytes: int  # the running kernel's scratch at that op


def peak_live(p: Payload) -> PeakLive:
    pk = partition_peak(0, p)
    return PeakLive(pk.bytes, pk.op, pk.opcode, pk.activation_bytes, pk.scratch_bytes)
