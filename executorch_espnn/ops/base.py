"""What every operator lowering is: ``OpLowering`` (the base class), ``Unit`` (the group of
graph nodes one lowering turns into payload ops), ``Registry`` and the ``register``
decorator the family modules use.  Imports only the layers below the lowerings (graph
reading, the payload builder); the family modules and ``units`` import this one."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from torch.fx import Node

from ..graph.constants import GraphContext
from ..graph.names import node_arg
from ..payload_builder import PayloadBuilder
from ..unsupported import Unsupported


@dataclass
class Unit:
    """One quantized operator with everything the payload needs from the graph.

    ``inputs`` are the per-tensor dequantize nodes of the activation operands (in the
    order the lowering asked for them), ``weights`` the call_function nodes that turn
    constants into operands (dequantize_per_channel …), ``compute`` the operator
    itself followed by any fused activation (and getitem for tuple outputs), and
    ``output`` the quantize node that ends the group.  An operator with several
    results (split: one ``getitem`` per piece) has one quantize node per used result:
    ``output`` is the first, ``more_outputs`` the others (see ``outputs``).
    """

    lowering: OpLowering
    anchor: Node
    compute: list[Node]
    inputs: list[Node]
    weights: list[Node]
    output: Node
    fused: list[Node] = field(default_factory=list)  # clamp-like nodes folded into the range
    more_outputs: list[Node] = field(default_factory=list)  # quantize nodes of further results

    @property
    def outputs(self) -> list[Node]:
        """The quantize node of every result the graph uses (``output`` first)."""
        return [self.output, *self.more_outputs]

    @property
    def nodes(self) -> list[Node]:
        """Every call_function node of the group (what gets tagged for delegation)."""
        seen: dict[Node, None] = {}
        for n in (*self.inputs, *self.weights, *self.compute, *self.outputs):
            seen.setdefault(n, None)
        return list(seen)


class OpLowering:
    """Base class of one operator family's capability check and lowering."""

    #: canonical target names ("aten.convolution.default") this lowering handles
    targets: ClassVar[tuple[str, ...]] = ()
    #: ATen operators to keep whole through to_edge (``ops_to_not_decompose``)
    preserve: ClassVar[tuple[str, ...]] = ()
    #: whether relu/relu6/hardtanh/clamp right after the operator fold into its output range
    fuses_activation: ClassVar[bool] = False
    #: whether the operator returns a list of tensors, each read through a ``getitem`` and
    #: quantized on its own (split); the unit then has one output per used piece
    returns_pieces: ClassVar[bool] = False
    #: whether the unit is a dequantize read straight by a quantize, anchored at that
    #: quantize (``units.is_requantize``): no operator node at all, ``compute`` is empty
    requantizes: ClassVar[bool] = False

    def activation_args(self, node: Node, ctx: GraphContext) -> list[Node]:
        """The operands that must be int8 activations (each through a dequantize node)."""
        x = node_arg(node, 0, "input")
        if not hasattr(x, "op"):
            raise Unsupported("first operand is not a tensor")
        return [x]

    def weight_nodes(self, node: Node, ctx: GraphContext) -> list[Node]:
        """call_function nodes computing constant operands, to delegate with the op."""
        return []

    def result_node(self, node: Node) -> Node:
        """The node whose value is the operator's (single) tensor result."""
        return node

    def lower(self, unit: Unit, b: PayloadBuilder) -> None:
        raise NotImplementedError


_L = TypeVar("_L", bound=type[OpLowering])


@dataclass
class Registry:
    """Target name → lowering instance.  Built once per partitioner/backend call."""

    by_target: dict[str, OpLowering]

    def get(self, target: str) -> OpLowering | None:
        return self.by_target.get(target)

    def preserved(self) -> list[str]:
        out: dict[str, None] = {}
        for low in self.by_target.values():
            for t in low.preserve:
                out.setdefault(t, None)
        return list(out)

    def __iter__(self) -> Iterator[OpLowering]:
        seen: dict[int, OpLowering] = {}
        for low in self.by_target.values():
            seen.setdefault(id(low), low)
        return iter(seen.values())


# Classes registered by the family modules at import time.  This list only grows while
# the package is imported (like a decorator table); nothing mutates it afterwards.
_CLASSES: list[type[OpLowering]] = []


def register(cls: _L) -> _L:
    """Class decorator: make ``cls`` part of the registry."""
    _CLASSES.append(cls)
    return cls

