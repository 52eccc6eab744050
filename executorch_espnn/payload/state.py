"""Bytes of decoded state the C engine needs for a payload (``espnn_info_t.state_bytes``).

The engine decodes a payload into a caller-provided buffer that holds no pointers, only
offsets and fixed-width fields, so its size is the same on 32- and 64-bit builds and can be
computed here, ahead of time, for the generated model header.  The layout (see
``docs/engine.md``, "State layout") is a header, one record per tensor, per delegate
input/output and per op, then per op its input ids (uint16, padded to 4 bytes) and its op
family's precomputed parameters.  The record sizes mirror ``ESPNN_STATE_*_BYTES`` in
``espnn_component/engine/src/espnn_internal.h`` and the ``*_STATE_BYTES`` of each
``engine/ops/<family>.c``; ``tests/test_engine.py`` checks this formula against
``espnn_inspect`` on every test payload in 64-bit and ``-m32`` builds.
"""

from __future__ import annotations

from .format import Opcode
from .model import Payload

STATE_HEADER_BYTES = 40
STATE_TENSOR_BYTES = 20
STATE_IO_BYTES = 12
STATE_OP_BYTES = 20

# Precomputed parameters per op, by opcode (the family's state struct in engine/ops/).
OP_STATE_BYTES: dict[Opcode, int] = {
    Opcode.QUANTIZE: 44,
    Opcode.DEQUANTIZE: 44,
    Opcode.CONV2D: 52,
    Opcode.DEPTHWISE_CONV2D: 52,
    Opcode.FULLY_CONNECTED: 32,
    Opcode.ADD: 104,
    Opcode.MUL: 88,
    Opcode.MAX_POOL2D: 40,
    Opcode.AVG_POOL2D: 40,
    Opcode.MEAN_HW: 24,
    Opcode.SOFTMAX: 20,
    Opcode.LUT: 4,
    Opcode.RESHAPE: 4,
    Opcode.TRANSPOSE: 36,
    Opcode.SLICE: 40,
    Opcode.CONCAT: 12,
    Opcode.PAD: 56,
    Opcode.UPSAMPLE_NEAREST: 24,
    Opcode.PRELU: 28,
    Opcode.UPSAMPLE_BILINEAR: 24,
    Opcode.TRANSPOSE_CONV2D: 48,
    Opcode.AVG_POOL2D_FLOAT: 52,
    Opcode.LAYER_NORM: 24,
    Opcode.BATCH_MATMUL: 48,
}


def _align4(n: int) -> int:
    return (n + 3) & ~3


def state_bytes(p: Payload) -> int:
    """``state_bytes`` that ``espnn_inspect`` reports for the encoded form of ``p``."""
    total = (
        STATE_HEADER_BYTES
        + STATE_TENSOR_BYTES * len(p.tensors)
        + STATE_IO_BYTES * (len(p.inputs) + len(p.outputs))
        + STATE_OP_BYTES * len(p.ops)
    )
    for op in p.ops:
        total += _align4(2 * len(op.inputs)) + OP_STATE_BYTES[op.opcode]
    return total
