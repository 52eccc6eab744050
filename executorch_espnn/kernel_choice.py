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
inside the arena the activations need anyway.

``speed`` (the default) keeps the fast kernels everywhere, but where an S3 depthwise
convolution's whole-map scratch sets the peak and its geometry can run in bands of output
rows (``scratch.depthwise_bandable``), the op gets the scratch of the tallest band that fits
the room the rest of the partition leaves (at least one row): the engine then copies each
band's padded input rows to the scratch and runs the same ESP-NN assembly on it, as ESP-NN
itself does for inputs over 40 KB (docs/engine.md, "Depthwise bands").  DS-CNN's 12,688 B
becomes one row's 1,920 B.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .firmware.options import OPTIMIZE_CHOICES
from .payload import Opcode, Payload
from .payload_peak import (
    band_rows_for,
    bandable_ops,
    conv_geometry,
    kernel_scratch,
    kernel_scratch_for,
    live_bytes,
    partition_peak,
)
from .scratch import ConvGeometry, depthwise_band_rows, depthwise_band_scratch

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
    """One op moved to ESP-NN's ANSI kernel: the scratch the speed plan gives its fast kernel
    (its whole-map scratch, or the band's where the speed plan would run it in bands)."""

    op: int
    opcode: str
    saved_bytes: int


def ansi_ops(p: Payload) -> list[AnsiChoice]:
    """The ops of ``p`` that run on ESP-NN's ANSI kernel by choice: a CONV2D/DEPTHWISE_CONV2D
    whose scratch_size is 0 although the target's fast kernel takes scratch for its operands
    (what the engine reads the same way), each with the scratch optimize="speed" would give
    it: the report's "bytes saved" is what the two plans differ by.  The speed plan is worked
    out on copies of the op records alone: choose_bands changes nothing but scratch sizes, so
    the tensors and the constants (megabytes for a large model) are shared with ``p``, which
    is left as it was."""
    moved = [i for i, op in enumerate(p.ops) if op.opcode in CHOOSABLE and op.scratch_size == 0
             and kernel_scratch(p, i) > 0]
    speed = replace(p, ops=[replace(op) for op in p.ops])
    for i in moved:
        speed.ops[i].scratch_size = kernel_scratch(p, i)
    choose_bands(speed)  # what payload_builder does for optimize="speed"
    return [AnsiChoice(i, p.ops[i].opcode.name, speed.ops[i].scratch_size) for i in moved]


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


@dataclass(frozen=True)
class BandChoice:
    """One depthwise op run in bands: rows per band, and the scratch that saved."""

    op: int
    rows: int
    saved_bytes: int


def banded_ops(p: Payload) -> list[BandChoice]:
    """The ops of ``p`` the engine runs in bands (what it reads from their scratch_size)."""
    out = []
    for i in range(len(p.ops)):
        geom = conv_geometry(p, i)  # read once for both the band rule and the whole-map figure
        rows = band_rows_for(p, i, geom)
        if rows:
            out.append(BandChoice(i, rows, kernel_scratch_for(p, i, geom) - p.ops[i].scratch_size))
    return out


def choose_bands(p: Payload) -> list[int]:
    """Band the bandable depthwise ops whose whole-map scratch would lift ``p``'s peak above
    the peak without any of their scratch: each gets the tallest band that fits beside its
    own live activations under that peak, at least one row (module docstring).  Returns the
    ops banded, in op order."""
    whole: dict[int, tuple[int, ConvGeometry]] = {}
    for i, geom in bandable_ops(p):
        if p.ops[i].scratch_size > 0 and not band_rows_for(p, i, geom):
            whole[i] = (p.ops[i].scratch_size, geom)
    for i in whole:
        p.ops[i].scratch_size = 0  # the peak none of their scratch lifts
    floor = partition_peak(0, p).bytes
    live = live_bytes(p)
    chosen = []
    for i, (full, geom) in whole.items():
        p.ops[i].scratch_size = full
        if live[i] + full <= floor:
            continue  # its scratch fits under the peak: the whole map at once
        rows = depthwise_band_rows(p.target, geom, floor - live[i]) or 1
        band = depthwise_band_scratch(p.target, geom, rows)
        if band < full:
            p.ops[i].scratch_size = band
            chosen.append(i)
    return chosen


def saved_total(choices: Sequence[AnsiChoice]) -> int:
    return sum(c.saved_bytes for c in choices)
