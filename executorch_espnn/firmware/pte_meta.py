"""What the generated header says about a .pte: inputs/outputs, planned bytes, delegates.

Runs inside the model-artifact step's child process; the SCons process never does.  The program is read
by executorch_espnn.pte (ExecuTorch's own deserializer), delegate figures come from the
lowering report, so the header never guesses; this module only maps that description to the
header's fields (the payload format's dtype codes, C names, boundary quantization).
"""

from __future__ import annotations

import hashlib

from ..io_arena import program_homes
from ..payload.format import DType
from ..payload.reader import decode
from ..pte import BACKEND_ID, ProgramInfo, TensorDecl, read_program
from .model_info import PteMeta, TensorMeta


def _tensor_meta(decl: TensorDecl | None, idx: int, name: str, quant: dict[int, tuple[float, int]],
                 channels_last: bool = False) -> TensorMeta:
    """``channels_last``: a 4-D program input the lowering took as [N, H, W, C] (what the
    program's delegates record: ``ProgramInfo.nhwc_inputs``)."""
    dtype = next((d for d in DType if decl is not None and d.numpy_name == decl.dtype), None)
    if decl is None or dtype is None:
        code = decl.scalar_type if decl is not None else "(not a tensor)"
        raise ValueError(
            f"{name}: ExecuTorch scalar type {code} is not supported at the model boundary "
            "(use float32 or int8 inputs/outputs)"
        )
    dims = list(decl.sizes)
    if len(dims) > 4:
        raise ValueError(f"{name}: rank {len(dims)} > 4 is not supported at the model boundary")
    numel = decl.numel
    scale, zp = quant.get(idx, (0.0, 0)) if dtype in (DType.INT8, DType.UINT8) else (0.0, 0)
    layout = ("NHWC" if channels_last else "NCHW") if len(dims) == 4 else "contiguous"
    return TensorMeta(name, int(dtype), dtype.numpy_name, dims, numel, numel * dtype.size, scale, zp, layout)


def _boundary_quant(info: ProgramInfo) -> tuple[dict[int, tuple[float, int]], dict[int, tuple[float, int]]]:
    """Quantization of int8 program inputs (read by a dequantize) and outputs (written by a
    quantize) when those ops run on the CPU: (scale, zero point) by value index."""
    reads = {c.input: (c.scale, c.zero_point) for c in info.quant_calls if not c.quantize}
    writes = {c.output: (c.scale, c.zero_point) for c in info.quant_calls if c.quantize}
    return reads, writes


def engine_ops(info: ProgramInfo) -> list[str]:
    """The opcodes the method's EspNNDelegateBackend payloads use, by name, sorted."""
    used = {op.opcode for backend, payload in zip(info.backends, info.payloads, strict=True)
            if backend == BACKEND_ID for op in decode(payload, validate=False).ops}
    return sorted(op.name.lower() for op in used)


def read(pte: bytes, method: str = "forward") -> PteMeta:
    info = read_program(pte, method)
    reads, writes = _boundary_quant(info)
    planned = list(info.planned_buffers)
    inputs = [_tensor_meta(d, i, f"input{n}", reads, n in info.nhwc_inputs)
              for n, (i, d) in enumerate(zip(info.input_values, info.inputs, strict=True))]
    outputs = [_tensor_meta(d, i, f"output{n}", writes)
               for n, (i, d) in enumerate(zip(info.output_values, info.outputs, strict=True))]
    in_homes, out_homes = program_homes(info)
    for t, home in zip(inputs + outputs, in_homes + out_homes, strict=True):
        if home is not None:
            t.in_arena, t.arena_offset = True, home
    return PteMeta(
        size=len(pte),
        sha256=hashlib.sha256(pte).hexdigest(),
        method=method,
        planned_bytes=sum(planned),
        planned_buffers=planned,
        delegates=list(info.used_backends),
        inputs=inputs,
        outputs=outputs,
        engine_ops=engine_ops(info),
    )
