"""The program's I/O dtype, chosen per model: ``lower(..., io="float")`` (the default) or ``"int8"``.

``float``: the program takes and returns float32; the delegate quantizes its inputs and
dequantizes its outputs (QUANTIZE/DEQUANTIZE ops inside the payload), and ExecuTorch's planned
memory holds the float tensors.

``int8``: the program takes and returns the int8 values of the delegate's own quantized side,
four times smaller.  The partitioner leaves the quantize nodes that read program inputs and the
dequantize nodes that make program outputs outside the delegates (``io_boundary``), then
ExecuTorch's own ``QuantizeInputs``/``QuantizeOutputs`` (``exir.passes.quantize_io_pass``)
remove them from the edge program, after ``to_edge_transform_and_lower``: each input placeholder
then holds what its single quantize produced, each output is what its dequantize read.  Those
passes need exactly that shape at the boundary (an input read by ONE quantize_per_tensor, an
output made by a dequantize_per_tensor), so ``quantize_io`` checks it first and names any input
or output that has no int8 form, with what to do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import LoweringError, check_choice
from .firmware.options import IO_CHOICES
from .graph.names import DEQUANTIZE, QUANTIZE, node_op
from .payload.format import DType

if TYPE_CHECKING:
    from executorch.exir import EdgeProgramManager
    from torch.export import ExportedProgram
    from torch.fx import Node

def check_io(io: object) -> str:
    """``io`` as one of IO_CHOICES, or OptionValueError naming the choices."""
    return check_choice(
        "io", io, IO_CHOICES, "unknown program I/O",
        'use "float" (float32 inputs and outputs, quantized inside the delegate) or "int8" '
        "(the int8 values of the delegate's quantized side, with the scale and zero point the "
        "report and model_pte.h give)",
    )


def view_bytes(numel: int, tensor_dtype: str, wanted_dtype: str) -> int:
    """The view buffer ``EspnnModel::input<T>()``/``output<T>()`` allocates on a program I/O
    tensor (``view_bytes`` of runtime/espnn_model.cpp): 0 in the tensor's own dtype (its storage
    is returned: with int8 I/O, ``input<int8_t>()`` costs nothing), numel x element size of the
    other dtype ("float32" 4 bytes, "int8" 1: the payload format's DType sizes)."""
    if wanted_dtype == tensor_dtype:
        return 0
    return numel * DType.from_numpy_name(wanted_dtype).size


def _user_output_indices(ep: ExportedProgram) -> list[int]:
    from torch.export.graph_signature import OutputKind

    return [i for i, s in enumerate(ep.graph_signature.output_specs) if s.kind == OutputKind.USER_OUTPUT]


def io_boundary(ep: ExportedProgram) -> set[Node]:
    """The quantize nodes that read a program input and the dequantize nodes whose only reader
    is the program's output: what int8 I/O removes, so no delegate may absorb them."""
    user_inputs = set(ep.graph_signature.user_inputs)
    out: set[Node] = set()
    for n in ep.graph.nodes:
        if n.op != "call_function":
            continue
        src = n.args[0] if n.args else None
        if node_op(n) == QUANTIZE and getattr(src, "op", None) == "placeholder" \
                and getattr(src, "name", None) in user_inputs:
            out.add(n)
        elif node_op(n) == DEQUANTIZE and n.users and all(u.op == "output" for u in n.users):
            out.add(n)
    return out


def _reader(n: Node) -> str:
    return ", ".join(f"{u.name} ({node_op(u)})" for u in n.users) or "nothing"


def check_boundary(ep: ExportedProgram) -> tuple[list[int], list[int]]:
    """The input and output indices QuantizeInputs/QuantizeOutputs take, or LoweringError naming
    each input or output that is not quantized at the boundary."""
    user_inputs = list(ep.graph_signature.user_inputs)
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    problems: list[str] = []
    for i, name in enumerate(user_inputs):
        p = placeholders[name]
        users = list(p.users)
        if len(users) == 1 and node_op(users[0]) == QUANTIZE:
            continue
        dtype = getattr(p.meta.get("val"), "dtype", None)
        if not any(node_op(u) == QUANTIZE for u in users):
            problems.append(
                f"input {i} ({name}, {dtype}) is not quantized: it is read by {_reader(p)}, "
                "so it has no int8 form (an index or mask input, or a float input of an operator "
                "that stays on the CPU in float)"
            )
        else:
            problems.append(
                f"input {i} ({name}) is read by {_reader(p)}: besides its quantize, an operator "
                "reads its float values, so the program must keep it float"
            )
    output = ep.graph.output_node()
    values = list(output.args[0])
    indices = _user_output_indices(ep)
    for k, i in enumerate(indices):
        v = values[i]
        if getattr(v, "op", None) == "call_function" and node_op(v) == DEQUANTIZE:
            continue
        what = f"{v.name} ({node_op(v)})" if hasattr(v, "name") else repr(v)
        problems.append(
            f"output {k} is produced by {what}, not by a dequantize_per_tensor: it has no int8 "
            "form (a float operator that stays on the CPU, an int or float result the quantizer "
            "does not quantize)"
        )
    if problems:
        raise LoweringError(
            'io="int8": the program cannot take and return int8:\n  - ' + "\n  - ".join(problems)
            + '\nLower this model with io="float" (custom_executorch_io = float, --io float), or '
            "change it so every input is quantized first and every output comes out of a delegated "
            "(quantized) operator."
        )
    return list(range(len(user_inputs))), indices


def quantize_io(edge: EdgeProgramManager) -> EdgeProgramManager:
    """The edge program with int8 inputs and outputs (ExecuTorch's QuantizeInputs and
    QuantizeOutputs), after ``check_boundary``."""
    from executorch.exir.passes.quantize_io_pass import QuantizeInputs, QuantizeOutputs

    inputs, outputs = check_boundary(edge.exported_program())
    passes: list[Any] = []
    if inputs:
        passes.append(QuantizeInputs(edge, inputs))
    if outputs:
        passes.append(QuantizeOutputs(edge, outputs))
    try:
        return edge.transform(passes)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LoweringError(f'io="int8": ExecuTorch\'s QuantizeInputs/QuantizeOutputs failed: {first}') from exc
