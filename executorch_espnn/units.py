"""Units: the dequantize → operator (→ clamp) → quantize groups that become payload ops.

``match_unit`` collects the group anchored at one operator node, as its lowering describes
it (``OpLowering.activation_args``, ``weight_nodes``, ``fuses_activation``,
``returns_pieces``); ``plan_nodes`` groups the nodes of one partition into units and
boundary quantize/dequantize nodes; ``build_payload`` lowers them, in graph order, into one
payload.  The partitioner and the backend's ``preprocess`` both go through here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torch.fx import Node

from .graph.constants import GraphContext
from .graph.names import (
    DEQUANTIZE,
    DEQUANTIZE_PER_CHANNEL,
    FUSABLE_ACTIVATIONS,
    GETITEM,
    QUANTIZE,
    clamp_bounds,
    is_dequantize,
    is_qdq,
    is_quantize,
    node_op,
)
from .graph.qdq import qdq_params
from .ops.base import OpLowering, Registry, Unit
from .payload import Target
from .payload_builder import BuildResult, Limits, PayloadBuilder
from .unsupported import Unsupported


def is_requantize(node: Node) -> bool:
    """A quantize reading a per-tensor dequantize directly: the anchor of a requantize unit
    (``ops.movement.Requantize``), the only unit anchored at a quantize node."""
    return is_quantize(node) and is_dequantize(node.args[0])


def is_anchor(node: Node) -> bool:
    """Whether ``node`` may anchor a unit: an operator, or a requantizing quantize."""
    if node.op != "call_function" or node_op(node) == GETITEM:
        return False
    return not is_qdq(node) or is_requantize(node)


def match_unit(node: Node, lowering: OpLowering, ctx: GraphContext) -> Unit:
    """Collect the dequantize/operator/activation/quantize group anchored at ``node``."""
    if lowering.requantizes:
        (dq,) = lowering.activation_args(node, ctx)
        qdq_params(dq)
        qdq_params(node)
        return Unit(lowering, node, [], [dq], [], node)
    inputs: list[Node] = []
    for i, arg in enumerate(lowering.activation_args(node, ctx)):
        if not is_dequantize(arg):
            if isinstance(arg, Node) and node_op(arg) == DEQUANTIZE_PER_CHANNEL:
                raise Unsupported(f"operand {i} is dequantized per channel; activations must be per tensor")
            raise Unsupported(
                f"operand {i} ({getattr(arg, 'name', arg)}) is not an int8-quantized tensor "
                "(the quantizer left it in float)"
            )
        qdq_params(arg)
        inputs.append(arg)
    weights = lowering.weight_nodes(node, ctx)
    if lowering.returns_pieces:
        return _match_pieces(node, lowering, inputs, weights)
    result = lowering.result_node(node)
    compute = [node] if result is node else [node, result]
    fused: list[Node] = []
    cur = result
    while lowering.fuses_activation and len(cur.users) == 1:
        (user,) = cur.users
        if user.op != "call_function" or node_op(user) not in FUSABLE_ACTIVATIONS or user.args[0] is not cur:
            break
        clamp_bounds(user)
        fused.append(user)
        compute.append(user)
        cur = user
    if not cur.users:
        raise Unsupported("result is unused")
    return Unit(lowering, node, compute, inputs, weights, _only_quantize(cur, "result"), fused)


def _reader(n: Node) -> str:
    return "the graph output" if n.op == "output" else f"{node_op(n)} ({n.name})"


def _only_quantize(value: Node, subject: str) -> Node:
    """The one quantize node that must be the only reader of a unit's result ``value``."""
    users = list(value.users)
    bad = [u for u in users if not is_quantize(u)]
    if bad:
        raise Unsupported(f"{subject} feeds {_reader(bad[0])} without int8 quantization")
    if len(users) > 1:
        raise Unsupported(f"{subject} is quantized more than once")
    qdq_params(users[0])
    return users[0]


def _match_pieces(node: Node, lowering: OpLowering, inputs: list[Node], weights: list[Node]) -> Unit:
    """The group of an operator returning a list (split): each used piece is a ``getitem``
    followed by exactly one quantize; unused pieces' getitems join the group as well, so
    no node reading the operator is left behind on the CPU."""
    pieces: list[tuple[int, Node]] = []
    for u in node.users:
        if u.op != "call_function" or node_op(u) != GETITEM or not isinstance(u.args[1], int):
            raise Unsupported(f"its list of pieces is read by {_reader(u)}, not by indexing")
        pieces.append((u.args[1], u))
    pieces.sort(key=lambda p: p[0])
    outputs: list[Node] = []
    for _, piece in pieces:
        if piece.users:
            outputs.append(_only_quantize(piece, f"piece {piece.name}"))
    if not outputs:
        raise Unsupported("result is unused")
    compute = [node, *(p for _, p in pieces)]
    return Unit(lowering, node, compute, inputs, weights, outputs[0], [], outputs[1:])


@dataclass
class PartitionPlan:
    """The units and boundary quantize/dequantize nodes of one set of nodes, in graph order."""

    units: list[Unit]
    quantize: list[Node]  # boundary QUANTIZE (float → int8)
    dequantize: list[Node]  # boundary DEQUANTIZE (int8 → float)
    order: list[Node]  # anchors and boundary nodes in graph order


def plan_nodes(nodes: Sequence[Node], ctx: GraphContext, registry: Registry) -> PartitionPlan:
    """Group ``nodes`` (graph order) into units; what is left must be boundary q/dq."""
    node_set = set(nodes)
    claimed: set[Node] = set()
    units: list[Unit] = []
    by_anchor: dict[Node, Unit] = {}
    for n in nodes:
        if n in claimed or not is_anchor(n) or (is_requantize(n) and n.args[0] not in node_set):
            continue
        low = registry.get(node_op(n))
        if low is None:
            raise Unsupported(f"{node_op(n)} has no ESP-NN lowering")
        unit = match_unit(n, low, ctx)
        missing = [m.name for m in unit.nodes if m not in node_set]
        if missing:
            raise Unsupported(f"{n.name}: nodes {missing} of its group are not in the partition")
        claimed.update(unit.nodes)
        units.append(unit)
        by_anchor[n] = unit
    quantize: list[Node] = []
    dequantize: list[Node] = []
    order: list[Node] = []
    for n in nodes:
        if n in by_anchor:
            order.append(n)
        elif n.op == "call_function" and n not in claimed:
            name = node_op(n)
            if name == QUANTIZE:
                quantize.append(n)
            elif name == DEQUANTIZE:
                dequantize.append(n)
            else:
                raise Unsupported(f"{n.name} ({name}) belongs to no group")
            order.append(n)
    return PartitionPlan(units, quantize, dequantize, order)


def build_payload(
    nodes: Sequence[Node],
    inputs: Sequence[Node],
    outputs: Sequence[Node],
    ctx: GraphContext,
    registry: Registry,
    target: Target,
    limits: Limits | None = None,
    *,
    ram_first: bool = False,
) -> BuildResult:
    """Lower the call_function ``nodes`` (graph order) reading ``inputs`` into one payload;
    ``ram_first``: RAM-first kernels (executorch_espnn.kernel_choice)."""
    plan = plan_nodes(nodes, ctx, registry)
    b = PayloadBuilder(ctx, target, limits, ram_first=ram_first)
    for n in inputs:
        b.add_input(n)
    units = {u.anchor: u for u in plan.units}
    quantize = set(plan.quantize)
    for n in plan.order:
        if n in units:
            u = units[n]
            u.lowering.lower(u, b)
            for q in u.outputs:
                if q not in b.values:
                    raise AssertionError(f"{type(u.lowering).__name__} did not define {q.name}")
        elif n in quantize:
            b.lazy_quantize(n)
        else:
            b.lazy_dequantize(n)
    return b.finish(outputs)
