"""A payload's per-op scratch as the lowering would size it for another target, read from the
payload's own operands (shapes, strides, padding), so golden payloads built for the generic
target can run as S3/P4 payloads in the engine tests."""

from __future__ import annotations

from executorch_espnn.payload import decode, encode
from executorch_espnn.payload.format import Opcode, Target
from executorch_espnn.payload.model import OpRec, Payload
from executorch_espnn.scratch import (
    SOFTMAX_ESPNN_MAX_ROW,
    ConvGeometry,
    conv_scratch,
    depthwise_scratch,
    softmax_scratch,
)


def op_scratch(p: Payload, op: OpRec, target: Target) -> int:
    """Scratch bytes op needs on ``target``, as executorch_espnn/ops lowers it."""
    if op.opcode == Opcode.SOFTMAX:
        row = p.tensors[op.inputs[0] or 0].dims[-1]
        return softmax_scratch(target, row) if row <= SOFTMAX_ESPNN_MAX_ROW else 0
    if op.opcode not in (Opcode.CONV2D, Opcode.DEPTHWISE_CONV2D):
        return 0
    pr = op.params
    if pr["dilation_h"] != 1 or pr["dilation_w"] != 1:
        return 0  # the engine's own kernel
    x, out = p.tensors[op.inputs[0] or 0], p.tensors[op.output]
    kh, kw = p.tensors[op.inputs[1] or 0].dims[1:3]
    depthwise = op.opcode == Opcode.DEPTHWISE_CONV2D
    if not depthwise and pr["groups"] != 1:
        return 0
    g = ConvGeometry(in_w=x.dims[2], in_h=x.dims[1], in_ch=x.dims[3], filter_w=kw, filter_h=kh,
                     out_w=out.dims[2], out_h=out.dims[1], out_ch=out.dims[3], pad_w=pr["pad_left"],
                     pad_h=pr["pad_top"], stride_w=pr["stride_w"], stride_h=pr["stride_h"],
                     ch_mult=pr["ch_mult"] if depthwise else 1)
    return depthwise_scratch(target, g) if depthwise else conv_scratch(target, g)


def retarget(data: bytes, target: Target, short_by: int = 0) -> bytes:
    """The payload for ``target``: each op's scratch (``short_by`` bytes short, never below
    0) gets a region of its own after the arena."""
    p = decode(data)
    p.target = target
    for op in p.ops:
        need = max(0, op_scratch(p, op, target) - short_by)
        op.scratch_offset, op.scratch_size = ((p.arena_size + 15) // 16 * 16, need) if need else (0, 0)
        if need:
            p.arena_size = op.scratch_offset + need
    return encode(p)


def banded(data: bytes, rows: int, target: Target = Target.ESP32S3) -> tuple[bytes, int]:
    """The payload for ``target`` with each bandable depthwise's scratch cut to a band of
    ``rows`` output rows (fewer where its map has fewer; the speed lowering's choice where the
    whole-map scratch sets the peak, docs/engine.md "Depthwise bands"), every other op's as
    ``retarget`` sizes it; and how many ops were banded."""
    from executorch_espnn.payload_peak import conv_geometry
    from executorch_espnn.scratch import depthwise_band_scratch, depthwise_bandable

    p = decode(retarget(data, target))
    count = 0
    for i, op in enumerate(p.ops):
        g = conv_geometry(p, i)
        if op.opcode == Opcode.DEPTHWISE_CONV2D and g is not None and depthwise_bandable(target, g):
            band = depthwise_band_scratch(target, g, min(rows, g.out_h - 1))
            if band < op.scratch_size:
                op.scratch_size = band
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
