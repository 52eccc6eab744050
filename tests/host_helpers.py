"""Fixtures for the host-runtime tests: small delegated programs built by hand from payloads
(so the adapter is tested independently of the lowering), and an independent numpy model of
what those payloads compute."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from executorch_espnn.payload import (
    ConstantPool,
    DType,
    Opcode,
    OpRec,
    Payload,
    Storage,
    TensorRec,
    encode,
)
from executorch_espnn.quant_math import quantize_multiplier, requant
from executorch_espnn.version import version_tuple

BACKEND_ID = "EspNNDelegateBackend"
IDENTITY = {"perm0": 0, "perm1": 1, "perm2": 2, "perm3": 3}


@dataclass(frozen=True)
class FcModel:
    """y = dequant(fc(quant(x))) with per-channel int8 weights: the numbers of one payload."""

    in_features: int
    out_features: int
    in_scale: float
    in_zp: int
    out_scale: float
    out_zp: int
    weights: np.ndarray  # int8 [out, in]
    bias: np.ndarray  # int32 [out]
    w_scales: np.ndarray  # float [out]

    def multipliers(self) -> tuple[list[int], list[int]]:
        mults, shifts = [], []
        for s in self.w_scales:
            m, sh = quantize_multiplier(float(np.float32(self.in_scale) * np.float32(s) / np.float32(self.out_scale)))
            assert sh <= 0, "choose scales with a real multiplier below 1"
            mults.append(m)
            shifts.append(sh)
        return mults, shifts

    def quantize_input(self, x: np.ndarray) -> np.ndarray:
        inv = np.float32(1.0) / np.float32(self.in_scale)
        q = np.rint((x.astype(np.float32) * inv).astype(np.float32)) + self.in_zp
        return np.clip(q, -128, 127).astype(np.int8)

    def reference_int8(self, x: np.ndarray) -> np.ndarray:
        """The int8 output, computed with numpy from the format's arithmetic."""
        q = self.quantize_input(x).astype(np.int64).reshape(-1, self.in_features)
        acc = (q - self.in_zp) @ self.weights.astype(np.int64).T + self.bias.astype(np.int64)
        mults, shifts = self.multipliers()
        out = requant(acc, np.array(mults, dtype=np.int64), np.array(shifts, dtype=np.int64)) + self.out_zp
        return np.clip(out, -128, 127).astype(np.int8)

    def reference(self, x: np.ndarray) -> np.ndarray:
        q = self.reference_int8(x).astype(np.float32)
        return ((q - np.float32(self.out_zp)) * np.float32(self.out_scale)).astype(np.float32)


def make_fc_model(in_features: int = 8, out_features: int = 4, seed: int = 0) -> FcModel:
    rng = np.random.default_rng(seed)
    return FcModel(
        in_features=in_features,
        out_features=out_features,
        in_scale=0.02,
        in_zp=3,
        out_scale=0.05,
        out_zp=-7,
        weights=rng.integers(-127, 128, size=(out_features, in_features)).astype(np.int8),
        bias=rng.integers(-500, 500, size=out_features).astype(np.int32),
        w_scales=rng.uniform(0.001, 0.01, size=out_features).astype(np.float32),
    )


def fc_payload(
    m: FcModel,
    *,
    rows: int = 1,
    io_dtype: DType = DType.FLOAT32,
    producer: tuple[int, int, int] | None = None,
) -> bytes:
    """QUANTIZE -> FULLY_CONNECTED -> DEQUANTIZE (float I/O), or FC alone (int8 I/O)."""
    pool = ConstantPool()
    mults, shifts = m.multipliers()
    w_off = pool.add(m.weights.tobytes())
    b_off = pool.add(m.bias.astype("<i4").tobytes())
    m_off = pool.add(np.array(mults, dtype="<i4").tobytes())
    s_off = pool.add(np.array(shifts, dtype="<i4").tobytes())
    in_dims = (rows, m.in_features)
    out_dims = (rows, m.out_features)
    fc_params = {"in_offset": -m.in_zp, "out_offset": m.out_zp, "act_min": -128, "act_max": 127}
    consts = [
        TensorRec(DType.INT8, (m.out_features, m.in_features), Storage.CONST, w_off),
        TensorRec(DType.INT32, (m.out_features,), Storage.CONST, b_off),
        TensorRec(DType.INT32, (m.out_features,), Storage.CONST, m_off),
        TensorRec(DType.INT32, (m.out_features,), Storage.CONST, s_off),
    ]
    if io_dtype == DType.FLOAT32:
        tensors = [
            TensorRec(DType.FLOAT32, in_dims, Storage.INPUT, 0),
            TensorRec(DType.INT8, in_dims, Storage.ARENA, 0, m.in_scale, m.in_zp),
            *consts,
            TensorRec(DType.INT8, out_dims, Storage.ARENA, _align16(rows * m.in_features), m.out_scale, m.out_zp),
            TensorRec(DType.FLOAT32, out_dims, Storage.OUTPUT, 0),
        ]
        ops = [
            OpRec(Opcode.QUANTIZE, (0,), 1, dict(IDENTITY)),
            OpRec(Opcode.FULLY_CONNECTED, (1, 2, 3, 4, 5), 6, fc_params),
            OpRec(Opcode.DEQUANTIZE, (6,), 7, dict(IDENTITY)),
        ]
        arena = _align16(rows * m.in_features) + _align16(rows * m.out_features)
        inputs, outputs = [0], [7]
    else:
        tensors = [
            TensorRec(DType.INT8, in_dims, Storage.INPUT, 0, m.in_scale, m.in_zp),
            *consts,
            TensorRec(DType.INT8, out_dims, Storage.OUTPUT, 0, m.out_scale, m.out_zp),
        ]
        ops = [OpRec(Opcode.FULLY_CONNECTED, (0, 1, 2, 3, 4), 5, fc_params)]
        arena = 16
        inputs, outputs = [0], [5]
    payload = Payload(
        tensors=tensors,
        ops=ops,
        inputs=inputs,
        outputs=outputs,
        constants=pool.bytes(),
        arena_size=arena,
        producer=producer or version_tuple(),
    )
    return encode(payload)


def _align16(n: int) -> int:
    return (n + 15) // 16 * 16


def patch_header(payload: bytes, **fields: int) -> bytes:
    """Overwrite header fields after encoding (the writer refuses to emit bad ones)."""
    layout = {"format_major": (4, "<H"), "format_minor": (6, "<H"), "producer_major": (8, "<B"),
              "producer_minor": (9, "<B"), "producer_patch": (10, "<B"), "magic": (0, "<I")}
    buf = bytearray(payload)
    for name, value in fields.items():
        off, fmt = layout[name]
        struct.pack_into(fmt, buf, off, value)
    return bytes(buf)


def delegated_pte(
    payload: bytes,
    example_inputs: Sequence[object],
    signature: Callable[..., object],
    *,
    backend_id: str = BACKEND_ID,
    before: Callable[[object], object] | None = None,
    after: Callable[[object], object] | None = None,
    channels_last_input: bool = False,
) -> bytes:
    """A .pte whose forward calls one delegate holding ``payload``.

    ``signature`` is a torch function with the delegate's input/output types (it is only traced,
    never run on the device); ``before``/``after`` add CPU operators around the delegate."""
    import torch
    from executorch.exir import to_edge
    from executorch.exir.lowered_backend_module import LoweredBackendModule

    class Signature(torch.nn.Module):
        def forward(self, *xs: torch.Tensor) -> object:
            return signature(*xs)

    delegate_inputs = tuple(
        before(x) if before is not None else x for x in example_inputs  # type: ignore[arg-type]
    )
    edge = to_edge(torch.export.export(Signature(), delegate_inputs))
    lowered = LoweredBackendModule(edge.exported_program(), backend_id, payload, [])

    class Program(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lowered = lowered

        def forward(self, *xs: torch.Tensor) -> object:
            ys = tuple(before(x) if before is not None else x for x in xs)  # type: ignore[arg-type]
            out = self.lowered(*ys)
            return after(out) if after is not None else out

    inputs = tuple(example_inputs)
    if channels_last_input:
        inputs = tuple(x.contiguous(memory_format=torch.channels_last) for x in inputs)  # type: ignore[attr-defined]
    program = to_edge(torch.export.export(Program(), inputs)).to_executorch()
    return bytes(program.buffer)
