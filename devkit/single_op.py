"""One op of a payload as a payload of its own: what a per-layer measurement runs (the RAM-first
cost benchmark, benchmarks/ram_first_cost.py).

The op keeps its parameters, constants and ``scratch_size`` (so a scratch-less CONV2D still runs
ESP-NN's ANSI kernel on an S3, and one with scratch the SIMD kernel); every activation it reads
becomes a delegate input and its result the delegate output, in the op's own physical dims.
Only the op's own constants are kept (a MobileNet layer with the whole model's weights would not
fit the emulated S3's SRAM), each at a CONST_ALIGN offset as the payload writer places them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt

from executorch_espnn.payload import DType, OpRec, Payload, Storage, TensorRec, decode, encode
from executorch_espnn.payload.format import CONST_ALIGN
from executorch_espnn.planner import plan_payload


def single_op_payload(payload: bytes | Payload, op: int) -> bytes:
    p = decode(payload) if isinstance(payload, bytes) else payload
    o = p.ops[op]
    tensors: list[TensorRec] = []
    inputs: list[int] = []
    new_inputs: list[int | None] = []
    blob = bytearray()
    for tid in o.inputs:
        if tid is None:
            new_inputs.append(None)
            continue
        t = p.tensors[tid]
        if t.storage == Storage.CONST:
            blob.extend(bytes(-len(blob) % CONST_ALIGN))
            tensors.append(replace(t, offset=len(blob)))
            blob.extend(p.constants[t.offset:t.offset + t.nbytes])
        else:
            tensors.append(replace(t, storage=Storage.INPUT, offset=len(inputs)))
            inputs.append(len(tensors) - 1)
        new_inputs.append(len(tensors) - 1)
    tensors.append(replace(p.tensors[o.output], storage=Storage.OUTPUT, offset=0))
    one = Payload(tensors=tensors, ops=[OpRec(o.opcode, tuple(new_inputs), len(tensors) - 1, dict(o.params), 0,
                                              o.scratch_size)],
                  inputs=inputs, outputs=[len(tensors) - 1], constants=bytes(blob), arena_size=0,
                  target=p.target, producer=p.producer)
    plan_payload(one)
    return encode(one)


def random_inputs(payload: bytes, seed: int = 0) -> list[npt.NDArray[np.generic]]:
    """Seeded inputs for a payload's delegate inputs (int8 codes, or floats in [-1, 1))."""
    p = decode(payload)
    rng = np.random.default_rng(seed)
    out: list[npt.NDArray[np.generic]] = []
    for tid in p.inputs:
        t = p.tensors[tid]
        if t.dtype == DType.INT8:
            out.append(rng.integers(-128, 128, t.dims, dtype=np.int8))
        else:
            out.append(rng.uniform(-1, 1, t.dims).astype(np.float32))
    return out
