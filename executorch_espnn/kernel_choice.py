"""RAM-first kernels (``lower(..., optimize="ram")``, ``custom_executorch_optimize = ram``).

On the ESP32-S3 (and the P4) ESP-NN's optimised convolution kernels take a scratch buffer in
the arena (executorch_espnn.scratch), which can set the arena's peak: DS-CNN's first depthwise
convolution writes a 12,688 B int16 copy of its input there, more than its two activations.
ESP-NN's ANSI kernels compute the same int8 results with no scratch, more slowly.  With
``optimize="ram"`` the lowering walks each partition's peak (the bound of
executorch_espnn.payload_peak: live activations plus the running kernel's scratch): while the
peak is set by a CONV2D or DEPTHWISE_CONV2D with scratch, that op gets ``scratch_size`` 0,
which tells the engine to call ESP-NN's ANSI kernel for it (docs/payload-format.md, "RAM-first
kernels"; engine/ops/conv2d.c and depthwise_conv2d.c choose it at prepare), and the peak is
recomputed.  Ops whose scratch does not set the peak keep the fast kernel: their scratch lives
inside the arena the activations need anyway.  ``speed`` (the default) never does this.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .firmware.options import OPTIMIZE_CHOICES
from .payload import Opcode, Payload
from .payload_peak import kernel_scratch, partition_peak

CHOOSABLE = (Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D)


def check_optimize(value: object) -> str:
    """``value`` if it is one of OPTIMIZE_CHOICES, else a clear error."""
    from .errors import LoweringError

    if value not in OPTIMIZE_CHOICES:
        raise LoweringError(
            f"optimize={value!r} is not a choice: use optimize=\"speed\" (the default: the chip's fastest "
            "ESP-NN kernels) or optimize=\"ram\" (ESP-NN's ANSI kernel where a fast kernel's scratch sets "
            "the arena's peak)")
    return str(value)


@dataclass(frozen=True)
class AnsiChoice:
    """One op moved to ESP-NN's ANSI kernel: the scratch its fast kernel would have taken."""

    op: int
    opcode: str
    saved_bytes: int


def ansi_ops(p: Payload) -> list[AnsiChoice]:
    """The ops of ``p`` that run on ESP-NN's ANSI kernel by choice: a CONV2D/DEPTHWISE_CONV2D
    whose scratch_size is 0 although the target's fast kernel takes scratch for its operands
    (what the engine reads the same way)."""
    out = []
    for i, op in enumerate(p.ops):
        if op.opcode in CHOOSABLE and op.scratch_size == 0:
            need = kernel_scratch(p, i)
            if need > 0:
                out.append(AnsiChoice(i, op.opcode.name, need))
    return out


def choose_ram_first(p: Payload) -> list[int]:
    """Zero the scratch of the ops whose fast kernel's scratch sets ``p``'s peak, one at a
    time from the highest peak (module docstring); returns their indices, in that order."""
    chosen: list[int] = []
    while True:
        peak = partition_peak(0, p)
        if peak.op < 0 or peak.scratch_bytes == 0 or p.ops[peak.op].opcode not in CHOOSABLE:
            return chosen
        p.ops[peak.op].scratch_size = 0
        chosen.append(peak.op)


def saved_total(choices: Sequence[AnsiChoice]) -> int:
    return sum(c.saved_bytes for c in choices)
