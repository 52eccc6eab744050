"""Which graph value each delegated layer computes, in the PT2E and in the float model.

A payload does not carry node names, so the layers are named by rebuilding each partition's
payload from its lowered module (``backend.build_partition``, the very code ``preprocess``
ran; the bytes are checked equal): its ``tensor_values`` give, per tensor, the edge node whose
value it holds.  The edge node's ``from_node`` provenance leads to the quantize node of the
PT2E program (``torch.export`` of convert_pt2e's module) whose int8 result the layer must
reproduce; that quantize node's input is the float-domain value, found in the float program by
name.  Where the quantizer folded a float node away (batch norm into the convolution before
it), the float value is the one after the folded nodes: the name is followed forward while the
float node's only user is absent from the PT2E program.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..graph.names import is_quantize
from ..payload import DType, Opcode

if TYPE_CHECKING:
    from torch.export import ExportedProgram
    from torch.fx import GraphModule, Node

    from ..layout import Perm


@dataclass(frozen=True)
class LayerPlan:
    """One delegated layer: where its int8 output lies, and the values it is compared with."""

    payload: bytes
    partition: int
    op: int
    opcode: str
    tensor: int  # tensor id of the layer's output
    perm: Perm  # physical order of that tensor
    shape: tuple[int, ...]  # logical shape
    scale: float
    zero_point: int
    quantize: str  # the PT2E program's quantize node giving the same int8 value
    float_node: str | None  # the float program's node of the same float value; None: not found


def _origins(node: Node) -> list[str]:
    """``node``'s name and those of the nodes it was derived from (edge → ATen → PT2E)."""
    out = [node.name]
    stack = list(node.meta.get("from_node") or [])
    while stack:
        src = stack.pop(0)
        out.append(str(src.name))
        stack.extend(getattr(src, "from_node", None) or [])
    return out


def lowered_modules(edge_program: ExportedProgram) -> list[Any]:
    """The ESP-NN lowered modules of an edge program, in the order the program calls them."""
    from ..pte import BACKEND_ID

    gm = edge_program.graph_module
    out = []
    for n in gm.graph.nodes:
        if n.op == "call_function" and "executorch_call_delegate" in str(n.target):
            mod = getattr(gm, str(n.args[0].target))
            if getattr(mod, "backend_id", None) == BACKEND_ID:
                out.append(mod)
    return out


def _float_value(name: str, float_nodes: dict[str, Node], pt2e_names: set[str]) -> Node | None:
    node = float_nodes.get(name)
    while node is not None:
        users = [u for u in node.users if u.op == "call_function"]
        if len(users) != 1 or users[0].name in pt2e_names:
            return node
        node = users[0]  # folded away by the quantizer (batch norm, its getitem)
    return None


def plan_layers(
    edge_program: ExportedProgram, pt2e: GraphModule, float_gm: GraphModule | None
) -> tuple[list[LayerPlan], list[str]]:
    """Every delegated op whose output is an int8 graph value (the first op to produce it),
    and notes on the layers that could not be matched."""
    from ..backend import build_partition

    pt2e_nodes = {n.name: n for n in pt2e.graph.nodes}
    float_nodes = {n.name: n for n in float_gm.graph.nodes} if float_gm is not None else {}
    plans: list[LayerPlan] = []
    notes: list[str] = []
    for part, mod in enumerate(lowered_modules(edge_program)):
        payload = bytes(mod.processed_bytes)
        sub = mod.original_module
        built = build_partition(sub, list(mod.compile_specs))
        if built.data != payload:
            notes.append(f"partition {part}: its payload could not be rebuilt identically; no layer table for it")
            continue
        by_name = {n.name: n for n in sub.graph.nodes}
        seen: set[str] = set()
        for i, op in enumerate(built.payload.ops):
            if op.opcode in (Opcode.QUANTIZE, Opcode.DEQUANTIZE):
                continue  # the boundary: the input's own grid, or back to float
            t = built.payload.tensors[op.output]
            value = built.tensor_values.get(op.output)
            if t.dtype != DType.INT8 or value is None:
                continue
            name, perm, shape = value
            q = next((pt2e_nodes[o] for o in _origins(by_name[name]) if o in pt2e_nodes
                      and is_quantize(pt2e_nodes[o])), None)
            if q is None or q.name in seen:
                continue
            seen.add(q.name)
            src = q.args[0]
            f = (_float_value(src.name, float_nodes, set(pt2e_nodes))
                 if float_gm is not None and hasattr(src, "name") else None)
            if float_gm is not None and f is None:
                notes.append(f"partition {part} op {i} ({op.opcode.name}): no float value named "
                             f"{getattr(src, 'name', src)} in the float model")
            plans.append(LayerPlan(payload, part, i, op.opcode.name, op.output, perm, tuple(shape),
                                   float(t.scale), int(t.zero_point), q.name,
                                   None if f is None else f.name))
    return plans, notes
