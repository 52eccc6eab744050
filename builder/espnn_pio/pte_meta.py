"""What the generated header says about a .pte: inputs/outputs, planned bytes, delegates.

Runs inside the model step's subprocess (it imports ExecuTorch); the SCons process never does.
Sizes come from the program itself (ExecuTorch's own deserializer), delegate figures from the
lowering report, so the header never guesses.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

# ExecuTorch ScalarType -> (espnn_format.h ESPNN_DTYPE_*, C name, element bytes)
_DTYPES: dict[int, tuple[int, str, int]] = {
    1: (1, "int8", 1),  # Char
    0: (2, "uint8", 1),  # Byte
    2: (3, "int16", 2),  # Short
    3: (4, "int32", 4),  # Int
    6: (5, "float32", 4),  # Float
}

_QUANTIZE = "quantized_decomposed::quantize_per_tensor"
_DEQUANTIZE = "quantized_decomposed::dequantize_per_tensor"


@dataclass
class TensorMeta:
    name: str
    dtype: int  # ESPNN_DTYPE_*
    dtype_name: str
    dims: list[int]
    numel: int
    nbytes: int
    scale: float = 0.0
    zero_point: int = 0


@dataclass
class PteMeta:
    size: int
    sha256: str
    method: str
    planned_bytes: int
    planned_buffers: list[int]
    delegates: list[str]
    inputs: list[TensorMeta] = field(default_factory=list)
    outputs: list[TensorMeta] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _scalar(values: list[Any], idx: int) -> float | int | None:
    val = values[idx].val
    for attr in ("double_val", "int_val"):
        if hasattr(val, attr):
            v: float | int = getattr(val, attr)
            return v
    return None


def _boundary_quant(plan: Any) -> tuple[dict[int, tuple[float, int]], dict[int, tuple[float, int]]]:
    """Quantization of int8 program inputs (read by a dequantize) and outputs (written by a
    quantize) when those ops run on the CPU: (scale, zero point) by value index."""
    op_names = [op.name + ("." + op.overload if op.overload else "") for op in plan.operators]
    reads: dict[int, tuple[float, int]] = {}
    writes: dict[int, tuple[float, int]] = {}
    for chain in plan.chains:
        for instr in chain.instructions:
            args = getattr(instr.instr_args, "args", None)
            op_index = getattr(instr.instr_args, "op_index", None)
            if args is None or op_index is None:
                continue
            name = op_names[op_index]
            if not (name.startswith(_QUANTIZE) or name.startswith(_DEQUANTIZE)) or len(args) < 3:
                continue
            scale, zp = _scalar(plan.values, args[1]), _scalar(plan.values, args[2])
            if scale is None or zp is None:
                continue
            if name.startswith(_DEQUANTIZE):
                reads[args[0]] = (float(scale), int(zp))
            else:
                writes[args[-1]] = (float(scale), int(zp))
    return reads, writes


def _tensor_meta(plan: Any, idx: int, name: str, quant: dict[int, tuple[float, int]]) -> TensorMeta:
    t = plan.values[idx].val
    code = int(t.scalar_type.value if hasattr(t.scalar_type, "value") else t.scalar_type)
    if code not in _DTYPES:
        raise ValueError(
            f"{name}: ExecuTorch scalar type {code} is not supported at the model boundary "
            "(use float32 or int8 inputs/outputs)"
        )
    dtype, dtype_name, elem = _DTYPES[code]
    dims = [int(d) for d in t.sizes]
    if len(dims) > 4:
        raise ValueError(f"{name}: rank {len(dims)} > 4 is not supported at the model boundary")
    numel = 1
    for d in dims:
        numel *= d
    scale, zp = quant.get(idx, (0.0, 0)) if dtype_name in ("int8", "uint8") else (0.0, 0)
    return TensorMeta(name, dtype, dtype_name, dims, numel, numel * elem, scale, zp)


def read(pte: bytes, method: str = "forward") -> PteMeta:
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(pte).program
    plans = {p.name: p for p in program.execution_plan}
    if method not in plans:
        raise ValueError(f"the .pte has no method '{method}' (it has: {', '.join(plans)})")
    plan = plans[method]
    reads, writes = _boundary_quant(plan)
    # non_const_buffer_sizes[0] is reserved by ExecuTorch; the rest are the planned arenas.
    planned = [int(s) for s in plan.non_const_buffer_sizes[1:]]
    inputs = [_tensor_meta(plan, i, f"input{n}", reads) for n, i in enumerate(plan.inputs)]
    outputs = [_tensor_meta(plan, i, f"output{n}", writes) for n, i in enumerate(plan.outputs)]
    return PteMeta(
        size=len(pte),
        sha256=hashlib.sha256(pte).hexdigest(),
        method=method,
        planned_bytes=sum(planned),
        planned_buffers=planned,
        delegates=sorted({d.id for d in plan.delegates}),
        inputs=inputs,
        outputs=outputs,
    )
