"""A payload's per-op scratch as the lowering would size it for another target, read from the
payload's own operands (shapes, strides, padding), so golden payloads built for the generic
target can run as S3/P4 payloads in the engine tests."""

from __future__ import annotations

from dataclasses import replace

from executorch_espnn.payload import decode, encode
from executorch_espnn.payload.format import Opcode, Target
from executorch_espnn.payload.model import Payload
from executorch_espnn.payload_peak import bandable_ops, kernel_scratch
from executorch_espnn.scratch import depthwise_band_scratch


def op_scratch(p: Payload, i: int, target: Target) -> int:
    """Scratch bytes op ``i`` needs on ``target``, as executorch_espnn/ops lowers it: the
    lowering's own rule (payload_peak.kernel_scratch), read as if ``p`` were built for
    ``target`` (the golden payloads are generic), on a shallow copy so ``p`` keeps its target."""
    return kernel_scratch(replace(p, target=target), i)


def retarget(data: bytes, target: Target, short_by: int = 0) -> bytes:
    """The payload for ``target``: each op's scratch (``short_by`` bytes short, never below
    0) gets a region of its own after the arena."""
    p = decode(data)
    p.target = target
    for i, op in enumerate(p.ops):
        need = max(0, kernel_scratch(p, i) - short_by)
        op.scratch_offset, op.scratch_size = ((p.arena_size + 15) // 16 * 16, need) if need else (0, 0)
        if need:
            p.arena_size = op.scratch_offset + need
    return encode(p)


def banded(data: bytes, rows: int, target: Target = Target.ESP32S3) -> tuple[bytes, int]:
    """The payload for ``target`` with each bandable depthwise's scratch cut to a band of
    ``rows`` output rows (fewer where its map has fewer; the speed lowering's choice where the
    whole-map scratch sets the peak, docs/engine.md "Depthwise bands"), every other op's as
    ``retarget`` sizes it; and how many ops were banded."""
    p = decode(retarget(data, target))
    count = 0
    for i, g in bandable_ops(p):
        band = depthwise_band_scratch(target, g, min(rows, g.out_h - 1))
        if band < p.ops[i].scratch_size:
            p.ops[i].scratch_size = band
            count += 1
    return encode(p), count


def without_conv_scratch(data: bytes) -> tuple[bytes, int]:
    """The payload with every CONV2D/DEPTHWISE_CONV2D's scratch taken away (what
    optimize="ram" does where their scratch sets the peak: ESP-NN's ANSI kernel), and how many
    of them the target's fast kernel would have needed scratch for (kernel_choice.ansi_ops)."""
    from executorch_espnn.kernel_choice import ansi_ops

    p = decode(data)
    for op in p.ops:
        if op.opcode in (Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D):
            op.scratch_offset = op.scratch_size = 0
    return encode(p), len(ansi_ops(p))
